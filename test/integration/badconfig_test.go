package integration

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

func TestBadConfigFailsStartupNamingEachField(t *testing.T) {
	cfg := writeConfig(t, `nodes:
  inventroy: []
  discovery: {policy: Sometimes}
  topology:
  - {subnet: 198.18.0.0/16, zone: a}
  - {subnet: 198.18.7.0/24, zone: b}
  - {subnet: 198.18.300.0/24, zone: c}
`)
	bin, err := framework.Binary("metal-cloud-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig", cp.AdminKubeconfig, "--cloud-config", cfg, //nolint:gosec // the built CCM
		"--bind-address", "127.0.0.1", "--secure-port", "0", "--leader-elect=false")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("startup with a bad config did not fail: %v\n%s", err, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{
		`unknown field "nodes.inventroy"`,
		`nodes.discovery.policy: Unsupported value: "Sometimes"`,
		`nodes.topology[1].subnet: Invalid value: "198.18.7.0/24": overlaps topology[0].subnet 198.18.0.0/16`,
		`nodes.topology[2].subnet: Invalid value: "198.18.300.0/24"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if lines := strings.Count(out, "\n"); lines > 40 {
		t.Errorf("message takes %d lines, more than a screen", lines)
	}
	if strings.Contains(out, "goroutine ") {
		t.Errorf("message has a stack dump")
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", out)
	}
}
