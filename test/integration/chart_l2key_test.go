package integration

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/l2/member"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// l2KeySecret is the chart's default l2Key.secretName.
const l2KeySecret = "metal-ccm-l2" //nolint:gosec // a Secret's name, not a credential

// TestChartL2Key: with an L2 pool the chart asks for the membership's key
// (or insecureMembership said out loud), makes the key's Secret once with a
// random key that the agents can read, keeps it across upgrades and on
// uninstall, and leaves a Secret of that name made by someone else alone.
// Installed with the real helm into the test's API server.
func TestChartL2Key(t *testing.T) {
	helm := helmBinary(t)
	l2Example := filepath.Join(chartDir, "examples", "l2.yaml")
	t.Run("an L2 pool without a key does not render", func(t *testing.T) {
		for _, tc := range []struct{ name, l2, want string }{
			{"no key", "", "set l2.secretFile: /etc/metal-ccm/l2/key"},
			{"a key outside the mounted Secret", "  l2: {secretFile: /tmp/key}\n", `l2.secretFile "/tmp/key": must be /etc/metal-ccm/l2/<key>`},
		} {
			values := writeValues(t, "agent: {enabled: true}\ncloudConfig: |\n  apiVersion: metal-ccm.io/v1alpha1\n  kind: CloudConfig\n"+
				"  loadBalancer:\n    pools:\n    - {name: home, addresses: [198.18.0.200-198.18.0.250], announce: [L2]}\n"+tc.l2)
			out, err := cp.Helm(context.Background(), "template", "metal-ccm", chartDir, "-f", values)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: rendered (%d bytes), %v; want an error saying %q", tc.name, len(out), err, tc.want)
			}
		}
		values := writeValues(t, "agent: {enabled: true}\ncloudConfig: |\n  apiVersion: metal-ccm.io/v1alpha1\n  kind: CloudConfig\n"+
			"  loadBalancer:\n    pools:\n    - {name: home, addresses: [198.18.0.200-198.18.0.250], announce: [L2]}\n  l2: {insecureMembership: true}\n")
		runHelm(t, helm, "template", "metal-ccm", chartDir, "-f", values)
	})

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := func(t *testing.T, ns string) {
		t.Helper()
		if _, err := cp.Helm(ctx, "install", "metal-ccm", chartDir, "--namespace", ns, "-f", l2Example); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if _, err := cp.Helm(context.Background(), "uninstall", "metal-ccm", "--namespace", ns); err != nil {
				t.Errorf("uninstall: %v", err)
			}
		})
	}
	secretKey := func(t *testing.T, ns string) []byte {
		t.Helper()
		s, err := client.CoreV1().Secrets(ns).Get(ctx, l2KeySecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data["key"]
	}

	t.Run("made once and kept across an upgrade and on uninstall", func(t *testing.T) {
		ns := framework.NewNamespace(t, client, "chart-l2key-made")
		install(t, ns)
		key := secretKey(t, ns)
		// The agents read it as the file the Secret's key "key" becomes.
		file := filepath.Join(t.TempDir(), "key")
		if err := os.WriteFile(file, key, 0o600); err != nil {
			t.Fatal(err)
		}
		if keys, err := member.ReadKeys(file); err != nil || len(keys) != 1 || len(keys[0]) != 32 {
			t.Fatalf("the chart's key reads as %d keys (%v), want one of 32 bytes", len(keys), err)
		}
		if _, err := cp.Helm(ctx, "upgrade", "metal-ccm", chartDir, "--namespace", ns, "-f", l2Example); err != nil {
			t.Fatal(err)
		}
		if again := secretKey(t, ns); string(again) != string(key) {
			t.Error("an upgrade changed the key: agents of two keys would split the membership")
		}
		if _, err := cp.Helm(ctx, "uninstall", "metal-ccm", "--namespace", ns); err != nil {
			t.Fatal(err)
		}
		if kept := secretKey(t, ns); string(kept) != string(key) {
			t.Error("uninstall changed the key")
		}
		// Installed again over the kept Secret: the same key.
		if _, err := cp.Helm(ctx, "install", "metal-ccm", chartDir, "--namespace", ns, "-f", l2Example); err != nil {
			t.Fatalf("install over the kept Secret: %v", err)
		}
		if again := secretKey(t, ns); string(again) != string(key) {
			t.Error("a reinstall changed the key")
		}
	})

	t.Run("a Secret made by the user is used as it is", func(t *testing.T) {
		ns := framework.NewNamespace(t, client, "chart-l2key-users")
		mine := []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")
		if _, err := client.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: l2KeySecret},
			Data: map[string][]byte{"key": mine}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		install(t, ns)
		if got := secretKey(t, ns); string(got) != string(mine) {
			t.Errorf("the user's key became %q", got)
		}
	})
}

// writeValues writes a values file for helm and returns its path.
func writeValues(t *testing.T, values string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(p, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
