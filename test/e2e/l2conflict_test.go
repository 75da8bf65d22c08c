package e2e

import (
	"bytes"
	"context"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// testL2Conflict: a host of the segment outside the cluster that takes vip
// statically (and says so, a gratuitous ARP) makes the agents leave vip:
// the CCM's leader records a Warning Event L2AddressConflict naming the
// host's MAC and sets the Service's Announced condition to that reason, and
// no node's MAC answers for vip any more; once the host is gone, a
// re-probe finds no one and the rendezvous owner answers again. The CCM
// runs in node 0's namespace (its observer joins the agents' membership
// from there) without the service controller, which would allocate
// addresses of its own: the test writes the status.
func testL2Conflict(t *testing.T, lab *netlab.L2Lab, svc *v1.Service, vip netip.Addr, cfg string) {
	// Node 0's agent has its relay to the API server there already.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := cp.WriteRelayAdminKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-l2-conflict", CloudConfig: cfg, NetNS: lab.NodeNamespace(0), Kubeconfig: kc,
		Args: []string{"--leader-elect-resource-name", "ccm-l2-conflict", "--controllers", "*,-service,-route,-cloud-node,-cloud-node-lifecycle",
			"--allocate-node-cidrs=false", "--configure-cloud-routes=false"}})
	owner := netlab.L2Owner(vip, []int{0, 1, 2})
	lab.WaitClientMAC(t, vip, owner, 30*time.Second)

	host, err := lab.AddHost("foreign", vip)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Remove() }()
	mac, err := host.MAC()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Announce(); err != nil {
		t.Fatal(err)
	}
	ev := framework.WaitObjectEvent(t, client, svc.Namespace, svc.Name, svcstatus.ReasonL2AddressConflict, time.Minute)
	t.Logf("Event: %s %s", ev.Type, ev.Message)
	if ev.Type != v1.EventTypeWarning || !strings.Contains(ev.Message, vip.String()) || !strings.Contains(ev.Message, mac.String()) {
		t.Errorf("Event %s %q: want a Warning naming %s and %s", ev.Type, ev.Message, vip, mac)
	}
	framework.WaitServiceCondition(t, client, svc.Namespace, svc.Name, svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonL2AddressConflict, time.Minute)

	// The client asks afresh: only the host answers, no node.
	watch, err := lab.WatchARPReplies(context.Background(), vip)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = watch.Close() }()
	if err := lab.FlushClientNeighbors(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	err = lab.ClientPing(ctx, vip)
	cancel()
	if err != nil {
		t.Errorf("the host holding %s does not answer the client's ping: %v", vip, err)
	}
	time.Sleep(time.Second) // replies in flight
	replies := watch.Replies()
	for i := range lab.Nodes {
		nodeMAC, err := lab.NodeMAC(i)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range replies {
			if bytes.Equal(r.MAC, nodeMAC) {
				t.Errorf("node %d answered for %s, held by the host %s: %+v", i, vip, mac, r)
			}
		}
	}

	if err := host.Remove(); err != nil {
		t.Fatal(err)
	}
	// The node that found the conflict probes again within 30 s.
	took := lab.WaitClientMAC(t, vip, owner, time.Minute)
	t.Logf("host gone: node %d answers %s again after %s", owner, vip, took.Round(time.Millisecond))
	framework.WaitServiceCondition(t, client, svc.Namespace, svc.Name, svcstatus.TypeAnnounced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, time.Minute)
}
