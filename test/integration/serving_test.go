package integration

import (
	"context"
	"crypto/tls"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestMetricsNeedAuthorization: /metrics follows the upstream delegated
// authentication and authorization; /healthz is open (the upstream default
// always-allowed path), for probes.
func TestMetricsNeedAuthorization(t *testing.T) {
	c := startCCM(t, framework.CCMOptions{})
	base := strings.TrimSuffix(c.HealthzURL, "/healthz")
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving cert on loopback
	}}
	get := func(path, token string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := insecure.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("/metrics", ""); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Errorf("anonymous /metrics: %d, want 401 or 403", code)
	}
	if code := get("/metrics", "not-a-token"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a bad token: %d, want 401", code)
	}
	if _, err := cp.Metrics(context.Background(), c); err != nil {
		t.Errorf("/metrics as an authorized user: %v", err)
	}
	if code := get("/healthz", ""); code != http.StatusOK {
		t.Errorf("anonymous /healthz: %d, want 200", code)
	}
}
