package metal

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

func TestNoNodeWhy(t *testing.T) {
	node := func(name string, labels map[string]string) *v1.Node {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
		return n
	}
	controlPlane := map[string]string{nodes.ExcludeLabel: ""}
	all := []*v1.Node{node("cp1", controlPlane), node("cp2", controlPlane)}
	mixed := append([]*v1.Node{node("w1", nil)}, all...)
	local := &v1.Service{Spec: v1.ServiceSpec{ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyLocal}}
	cluster := &v1.Service{}
	for _, tc := range []struct {
		name  string
		list  []*v1.Node
		svc   *v1.Service
		proto svcstatus.Protocol
		want  string
	}{
		{"bgp, all control-plane", all, cluster, svcstatus.BGP, "no eligible node among 2 nodes: 2 labelled " + nodes.ExcludeLabel},
		{"l2, all control-plane", all, cluster, svcstatus.L2, "no eligible node among 2 nodes: 2 labelled " + nodes.ExcludeLabel},
		{"local, no endpoint", mixed, local, svcstatus.BGP, "no eligible node: no node that may carry LoadBalancer traffic has a ready endpoint"},
		{"cluster, a node qualifies", mixed, cluster, svcstatus.BGP, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := noNodeWhy(tc.list, &config.CloudConfig{}, tc.svc, &svcstatus.Announcement{Protocol: tc.proto})
			if !strings.HasPrefix(got, tc.want) || (got == "") != (tc.want == "") {
				t.Errorf("noNodeWhy = %q, want prefix %q", got, tc.want)
			}
		})
	}
}
