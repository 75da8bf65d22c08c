package replica

import (
	"context"
	"net/netip"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
)

func agentTestNode(name, v4, v6 string, cidrs ...string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{PodCIDRs: cidrs},
		Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: v4}, {Type: v1.NodeInternalIP, Address: v6},
		}},
	}
}

func agentTestPod(name, ns, node string, phase v1.PodPhase, ready v1.ConditionStatus, labels map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       v1.PodSpec{NodeName: node},
		Status:     v1.PodStatus{Phase: phase, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: ready}}},
	}
}

// TestAgentRoutes: a node's pod routes count as in place while its agent's
// pod (the right namespace and label) is Running and Ready; nothing else
// counts.
func TestAgentRoutes(t *testing.T) {
	agent := map[string]string{"app.kubernetes.io/name": "metal-node-agent"}
	other := map[string]string{"app.kubernetes.io/name": "something-else"}
	cs := fake.NewClientset(
		agentTestNode("ready", "198.18.1.1", "2001:db8:1::1", "198.19.1.0/24", "2001:db8:19:1::/64"),
		agentTestNode("notready", "198.18.1.2", "2001:db8:1::2", "198.19.2.0/24"),
		agentTestNode("pending", "198.18.1.3", "2001:db8:1::3", "198.19.3.0/24"),
		agentTestNode("otherlabel", "198.18.1.4", "2001:db8:1::4", "198.19.4.0/24"),
		agentTestNode("otherns", "198.18.1.5", "2001:db8:1::5", "198.19.5.0/24"),
		agentTestNode("nov6", "198.18.1.6", "198.18.1.66", "198.19.6.0/24", "2001:db8:19:6::/64"),
		agentTestPod("a1", "agents", "ready", v1.PodRunning, v1.ConditionTrue, agent),
		agentTestPod("a2", "agents", "notready", v1.PodRunning, v1.ConditionFalse, agent),
		agentTestPod("a3", "agents", "pending", v1.PodPending, v1.ConditionTrue, agent),
		agentTestPod("a4", "agents", "otherlabel", v1.PodRunning, v1.ConditionTrue, other),
		agentTestPod("a5", "elsewhere", "otherns", v1.PodRunning, v1.ConditionTrue, agent),
		agentTestPod("a6", "agents", "nov6", v1.PodRunning, v1.ConditionTrue, agent),
		agentTestPod("a7", "agents", "gone", v1.PodRunning, v1.ConditionTrue, agent), // its node is not there
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newAgentRoutes(ctx, cs, "agents", "")
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return r.get().hasSynced(), nil
	}); err != nil {
		t.Fatal(err)
	}
	got := r.NodeRoutes()
	slices.SortFunc(got, func(a, b announcer.NodeRoute) int { return a.CIDR.Addr().Compare(b.CIDR.Addr()) })
	want := []announcer.NodeRoute{
		{Node: "ready", CIDR: netip.MustParsePrefix("198.19.1.0/24"), NextHop: netip.MustParseAddr("198.18.1.1")},
		{Node: "nov6", CIDR: netip.MustParsePrefix("198.19.6.0/24"), NextHop: netip.MustParseAddr("198.18.1.6")},
		{Node: "ready", CIDR: netip.MustParsePrefix("2001:db8:19:1::/64"), NextHop: netip.MustParseAddr("2001:db8:1::1")},
	}
	if !slices.Equal(got, want) {
		t.Errorf("NodeRoutes() = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		node string
		v4   bool
		want string
	}{
		{"ready", true, "198.18.1.1"},
		{"ready", false, "2001:db8:1::1"},
		{"nov6", false, ""},
		{"gone", true, ""},
	} {
		hop, ok := r.NextHopFor(tc.node, tc.v4)
		if (tc.want == "") == ok || (ok && hop != netip.MustParseAddr(tc.want)) {
			t.Errorf("NextHopFor(%s, v4 %v) = %v %v, want %q", tc.node, tc.v4, hop, ok, tc.want)
		}
	}
}
