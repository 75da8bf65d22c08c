package metal

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller"
	"github.com/metal-ccm/metal-ccm/pkg/lbrule"
)

// TestClassOfTheConfig: the provider serves the class of its config, and
// the address in the status of a Service of another class, or of one
// without a class, is not held: the allocator serves the same Services as
// the service controller.
func TestClassOfTheConfig(t *testing.T) {
	const ours = "metal-ccm.io/bgp"
	theirs := withStatus(lbService("theirs", 0), "198.18.140.1")
	theirs.Spec.LoadBalancerClass = ptr.To("example.com/other")
	classless := withStatus(lbService("classless", 0), "198.18.140.2")
	c, _ := newInformedCloud(t, `apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  class: `+ours+`
  pools:
  - {name: two, addresses: [198.18.140.1-198.18.140.2]}
`, theirs, classless)
	if got, want := c.ServiceRule(), (lbrule.Rule{Class: ours}); got != want {
		t.Errorf("ServiceRule = %+v, want %+v", got, want)
	}
	for _, name := range []string{"a", "b"} {
		svc := lbService(name, 0)
		svc.Spec.LoadBalancerClass = ptr.To(ours)
		if _, err := c.EnsureLoadBalancer(context.Background(), "cluster", svc, nil); err != nil {
			t.Errorf("%s: both addresses are free for the Services of the class, got %v", name, err)
		}
	}
	for _, svc := range []*v1.Service{theirs, classless} {
		if held := c.lb.alloc.Held(lbcontroller.Key(svc)); len(held) != 0 {
			t.Errorf("%s holds %v", svc.Name, held)
		}
	}
}

// TestClassWaitsForRestart: a reload that changes the class applies the
// rest of the config but keeps the rule the service controller and the
// announcers were built with.
func TestClassWaitsForRestart(t *testing.T) {
	c, _ := newTestCloud(t, retryConfig)
	if _, err := c.Reload([]byte(retryConfig + "  class: metal-ccm.io/bgp\n  serveDefaultClass: true\n")); err != nil {
		t.Fatal(err)
	}
	if got := c.ServiceRule(); got != (lbrule.Rule{}) {
		t.Errorf("ServiceRule after a reload = %+v, want the rule of the start", got)
	}
	if got := c.state.Load().cfg.LoadBalancer.Class; got != "metal-ccm.io/bgp" {
		t.Errorf("the reloaded config was not applied: class %q", got)
	}
}
