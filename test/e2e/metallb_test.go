package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// metallbNamespace is MetalLB's own namespace, where its objects live.
const metallbNamespace = "metallb-system"

// TestMigrationFromMetalLB runs MetalLB's released controller
// (hack/build-metallb.sh) with its own CRDs against the real API server until
// it has given three Services addresses, two of them one shared address
// (metallb.io/allow-shared-ip). Then MetalLB's controller stops, the
// converter (migrate metallb, from the cluster) writes the cloud-config, and
// a replica starts with it: every address stays, the pair still shares one,
// and the router learns each from the replica.
func TestMigrationFromMetalLB(t *testing.T) {
	bin, err := framework.Binary("metallb-controller")
	if err != nil {
		t.Fatalf("%v (hack/build-metallb.sh builds it)", err)
	}
	ccmBin, err := framework.Binary("metal-cloud-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 1})
	registerLabNodes(t, lab)
	installMetalLBCRDs(t)
	framework.NewNamespace(t, client, metallbNamespace)
	speaker := lab.SpeakerAddrs(netlab.IPv4)[0]
	applyYAML(t, fmt.Sprintf(`apiVersion: metallb.io/v1beta1
kind: IPAddressPool
metadata: {name: lab, namespace: %[1]s}
spec:
  addresses: [198.18.220.0/29]
---
apiVersion: metallb.io/v1beta2
kind: BGPPeer
metadata: {name: router, namespace: %[1]s}
spec:
  myASN: %[2]d
  peerASN: %[3]d
  peerAddress: %[4]s
  sourceAddress: %[5]s
  holdTime: 9s
---
apiVersion: metallb.io/v1beta1
kind: BGPAdvertisement
metadata: {name: lab, namespace: %[1]s}
spec:
  ipAddressPools: [lab]
`, metallbNamespace, lab.Opts.SpeakerASN, lab.Opts.RouterASN, netlab.RouterAddr(netlab.IPv4), speaker))

	port, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	mlb, err := framework.StartProcess("metallb-controller", filepath.Join(cp.Dir, "logs", "metallb-controller.log"), false, bin,
		"--kubeconfig", cp.AdminKubeconfig, "--namespace", metallbNamespace, "--webhook-mode", "disabled",
		"--port", strconv.Itoa(port), "--log-level", "info")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		mlb.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("MetalLB controller log, last lines:\n%s", mlb.LogTail(40))
		}
	})

	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	const share = "metallb.io/allow-shared-ip"
	framework.CreateLoadBalancer(t, client, ns, "web")
	framework.CreateLoadBalancer(t, client, ns, "dns-tcp", framework.WithPort(v1.ProtocolTCP, 53), framework.WithAnnotation(share, "dns"))
	framework.CreateLoadBalancer(t, client, ns, "dns-udp", framework.WithPort(v1.ProtocolUDP, 53), framework.WithAnnotation(share, "dns"))
	names := []string{"web", "dns-tcp", "dns-udp"}
	before := map[string]netip.Addr{}
	for _, n := range names {
		before[n] = waitVIPs(t, ns, n, 1)[0]
	}
	if before["dns-tcp"] != before["dns-udp"] || before["web"] == before["dns-tcp"] {
		t.Fatalf("MetalLB gave %v: want the dns pair on one address, web on another", before)
	}
	t.Logf("MetalLB's addresses after %s: %v", time.Since(start).Round(time.Second), before)
	// MetalLB's controller stops writing status before ours starts.
	mlb.Stop(5 * time.Second)

	cfg := filepath.Join(t.TempDir(), "cloud-config.yaml")
	cmd := exec.Command(ccmBin, "migrate", "metallb", "--kubeconfig", cp.AdminKubeconfig, //nolint:gosec // this repository's binary
		"--announce-from", "Replicas", "-o", cfg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("migrate metallb: %v\n%s", err, out)
	} else {
		t.Logf("migrate metallb's report:\n%s", out)
	}
	if b, err := os.ReadFile(cfg); err == nil { //nolint:gosec // the test's own file
		t.Logf("cloud-config:\n%s", b)
	}
	cp.StartCCMForTest(t, framework.CCMOptions{
		Name: "ccm-metallb", CloudConfig: cfg,
		Args: []string{"--leader-elect-resource-name", "ccm-metallb", "--leader-elect-lease-duration", "4s",
			"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms", "--node-monitor-period", "1s"},
	})
	waitEstablished(t, lab, time.Minute, speaker)
	t.Logf("the replica's session is up after %s", time.Since(start).Round(time.Second))
	for _, n := range names {
		waitRoute(t, lab, before[n], lab.NodeAddrs(netlab.IPv4)...)
	}
	t.Logf("the router has every address after %s", time.Since(start).Round(time.Second))
	for _, n := range names {
		s, err := client.CoreV1().Services(ns).Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := framework.IngressIPs(s); len(got) != 1 || got[0] != before[n].String() {
			t.Errorf("%s: address %v after the switch, MetalLB's was %s", n, got, before[n])
		}
	}
}

// installMetalLBCRDs applies the CRDs of the pinned MetalLB release
// (_output/metallb/crd, copied there by hack/build-metallb.sh) and removes
// them when the test ends.
func installMetalLBCRDs(t *testing.T) {
	t.Helper()
	dir := filepath.Join(framework.RepoRoot(), "_output", "metallb", "crd")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cp.Kubectl(ctx, "apply", "--server-side", "-f", dir); err != nil {
		t.Fatalf("MetalLB's CRDs (hack/build-metallb.sh copies them): %v", err)
	}
	t.Cleanup(func() { _, _ = cp.Kubectl(context.Background(), "delete", "--wait=false", "-f", dir) })
	if _, err := cp.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=50s", "-f", dir); err != nil {
		t.Fatal(err)
	}
}

// applyYAML applies the objects of doc with kubectl, retrying while the API
// server's discovery of new CRDs lags.
func applyYAML(t *testing.T, doc string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if _, err = cp.Kubectl(context.Background(), "apply", "-f", p); err == nil {
			return
		}
	}
	t.Fatal(err)
}
