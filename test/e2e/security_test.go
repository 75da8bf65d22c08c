package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

const nobody = 65534

// TestUnprivilegedSpeakerWithPassword runs a replica as user nobody with no
// capabilities at all, peering with TCP MD5: its sessions come up, it
// announces, it listens on nothing but its own secure port, and the password
// is in none of its output.
func TestUnprivilegedSpeakerWithPassword(t *testing.T) {
	const password = "md5-s3cret-e2e" //nolint:gosec // the test's own password, between the lab's router and the replica
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 1, Password: password})
	registerLabNodes(t, lab)

	dir, err := os.MkdirTemp("", "metal-ccm-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	own := func(p string) {
		t.Helper()
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o750); err != nil { //nolint:gosec // a folder: nobody must enter it
		t.Fatal(err)
	}
	own(dir)
	copyTo := func(src, name string) string {
		t.Helper()
		data, err := os.ReadFile(src) //nolint:gosec // files the test wrote
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, name)
		if err := os.WriteFile(dst, data, 0o600); err != nil { //nolint:gosec // in the test's temporary folder
			t.Fatal(err)
		}
		own(dst)
		return dst
	}
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	own(pwFile)
	base, err := os.ReadFile(ccmConfig(t, lab, 0, "198.18.160.0/24", "2001:db8:160::/120"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.ReplaceAll(string(base), "    holdTime: 9s\n", "    holdTime: 9s\n    passwordFile: "+pwFile+"\n")
	cfgPath := filepath.Join(dir, "cloud-config.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil { //nolint:gosec // in the test's temporary folder
		t.Fatal(err)
	}
	own(cfgPath)
	kubeconfig := copyTo(cp.AdminKubeconfig, "kubeconfig")
	certs := filepath.Join(dir, "certs")

	c := cp.StartCCMForTest(t, framework.CCMOptions{
		Name: "ccm-nobody", Kubeconfig: kubeconfig, CloudConfig: cfgPath,
		Args: []string{"--cert-dir", certs, "--leader-elect-resource-name", "e2e-nobody"},
		Wrapper: []string{"setpriv", fmt.Sprintf("--reuid=%d", nobody), fmt.Sprintf("--regid=%d", nobody),
			"--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := lab.WaitEstablished(ctx, lab.SpeakerAddrs(netlab.IPv4)[0], lab.SpeakerAddrs(netlab.IPv6)[0]); err != nil {
		t.Fatalf("MD5 sessions from an unprivileged speaker: %v", err)
	}
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	framework.CreateLoadBalancer(t, client, ns, "web")
	waitRoute(t, lab, waitVIPs(t, ns, "web", 1)[0], lab.NodeAddrs(netlab.IPv4)...)

	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.PID()))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", fmt.Sprintf("Uid:\t%d", nobody)} {
		if !strings.Contains(string(status), want) {
			t.Errorf("process status lacks %q", want)
		}
	}
	// Listening sockets of the process: only the secure serving port.
	raw, err := exec.Command("ss", "-Hltnp").Output()
	if err != nil {
		t.Fatal(err)
	}
	out := string(raw)
	port := c.HealthzURL[strings.LastIndex(c.HealthzURL, ":")+1 : strings.LastIndex(c.HealthzURL, "/")]
	mine := regexp.MustCompile(fmt.Sprintf(`pid=%d,`, c.PID()))
	listening := 0
	for _, line := range strings.Split(out, "\n") {
		if !mine.MatchString(line) {
			continue
		}
		listening++
		if !strings.Contains(line, ":"+port+" ") {
			t.Errorf("the CCM listens on more than its secure port: %s", line)
		}
	}
	if listening != 1 {
		t.Errorf("found %d listening sockets of the CCM, want exactly its secure port %s:\n%s", listening, port, out)
	}
	for _, text := range []string{c.Log()} {
		if strings.Contains(text, password) {
			t.Error("the BGP password appears in the CCM's output")
		}
	}
}
