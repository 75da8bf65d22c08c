package l2

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/elect"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// TestObserverConflicts: an address the agents report in conflict shows
// on the Service (the Announced condition's reason), in the replica's
// metric (its count), and in one Warning Event per conflict and foreign MAC, told
// again when a conflict comes back after it ended.
func TestObserverConflicts(t *testing.T) {
	cfg, err := config.Parse([]byte(l2TestConfig))
	if err != nil {
		t.Fatal(err)
	}
	vip := netip.MustParseAddr("198.18.0.5")
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec:   v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
		Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: vip.String()}}}}}
	services := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := services.Add(svc); err != nil {
		t.Fatal(err)
	}
	o := newObserver(cfg, nil, corelisters.NewServiceLister(services), func(*v1.Service) bool { return true })
	var events []string
	env := protocol.LeaderEnv{Event: func(_ runtime.Object, typ, reason, format string, args ...any) {
		events = append(events, typ+" "+reason+" "+fmt.Sprintf(format, args...))
	}}
	foreign := net.HardwareAddr{0x02, 0xf0, 0, 0, 0, 1}
	round := func(cs map[netip.Addr]elect.Conflict) {
		o.decide(context.Background(), elect.Round{Choice: elect.Choice{Quorum: true, Owners: map[netip.Prefix]netip.Addr{}, Conflicts: cs}})
	}
	warned := map[conflictKey]string{}
	lead := func() {
		list := []*v1.Service{svc}
		o.conflictEvents(list, &cfg.LoadBalancer, env, warned)
	}
	for _, step := range []struct {
		name      string
		conflicts map[netip.Addr]elect.Conflict
		reason    string
		metric    int // metal_ccm_l2_address_conflicts
		events    int // Warning Events recorded so far
	}{
		{"none", nil, svcstatus.ReasonNoEligibleNode, 0, 0},
		{"found by n1", map[netip.Addr]elect.Conflict{vip: {MAC: foreign, Nodes: []string{"n1"}}}, ReasonL2AddressConflict, 1, 1},
		{"still there, found by two", map[netip.Addr]elect.Conflict{vip: {MAC: foreign, Nodes: []string{"n1", "n2"}}}, ReasonL2AddressConflict, 1, 1},
		{"ended", nil, svcstatus.ReasonNoEligibleNode, 0, 1},
		{"back, MAC unknown", map[netip.Addr]elect.Conflict{vip: {Nodes: []string{"n2"}}}, ReasonL2AddressConflict, 1, 2},
	} {
		t.Run(step.name, func(t *testing.T) {
			round(step.conflicts)
			lead()
			a, ok := o.Announcement(vip, nil)
			if !ok || a.Reason() != step.reason {
				t.Errorf("announcement %+v (%v): reason %s, want %s", a, ok, a.Reason(), step.reason)
			}
			if len(events) != step.events {
				t.Fatalf("events %q, want %d", events, step.events)
			}
			if step.events > 0 {
				last := events[len(events)-1]
				if !strings.HasPrefix(last, v1.EventTypeWarning+" "+ReasonL2AddressConflict+" "+vip.String()) {
					t.Errorf("event %q, want a Warning %s naming %s", last, ReasonL2AddressConflict, vip)
				}
			}
			if got := o.conflictCount(); got != step.metric {
				t.Errorf("metal_ccm_l2_address_conflicts = %v, want %v", got, step.metric)
			}
		})
	}
	if !strings.Contains(events[0], foreign.String()) || !strings.Contains(events[1], "MAC unknown") {
		t.Errorf("events %q: want the foreign MAC, then unknown", events)
	}
}
