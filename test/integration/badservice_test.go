package integration

import (
	"context"
	"regexp"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/metal"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// badServiceConfig has a pool of both families, one only for Services that
// name it, one for another namespace, and one of IPv4 only.
const badServiceConfig = `loadBalancer:
  pools:
  - name: default
    addresses: [198.18.134.0/29, "2001:db8:134::/125"]
  - name: tiny
    autoAssign: false
    addresses: [198.18.135.1-198.18.135.2]
  - name: elsewhere
    autoAssign: false
    namespaces: [some-other-namespace]
    addresses: [198.18.136.0/30]
  - name: v4only
    autoAssign: false
    addresses: [198.18.137.0/30]
`

// eventSource is the component of the provider's own Events; the upstream
// service controller records its own (SyncLoadBalancerFailed) besides.
const eventSource = "metal-cloud-controller-manager"

// providerEvents lists the provider's Events on a Service.
func providerEvents(t *testing.T, ns, name string) []v1.Event {
	t.Helper()
	evs, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	var out []v1.Event
	for _, e := range evs.Items {
		if e.Source.Component == eventSource {
			out = append(out, e)
		}
	}
	return out
}

// TestBadServicesAreRefusedAndDisturbNothing creates every kind of bad
// Service next to good ones: each bad one gets a Warning Event with the exact
// reason and no address; the good ones keep theirs; the CCM neither panics
// nor restarts.
func TestBadServicesAreRefusedAndDisturbNothing(t *testing.T) {
	ccm := startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, badServiceConfig)})
	pid := ccm.PID()
	ns := newNamespace(t)

	good := map[string][]string{}
	for _, g := range []struct {
		name string
		n    int
		opts []framework.ServiceOption
	}{
		{"good", 1, nil},
		{"good-dual", 2, []framework.ServiceOption{framework.DualStack}},
		{"good-share", 1, []framework.ServiceOption{framework.WithAnnotation(string(annotation.NameSharingKey), "dns"), framework.WithPort(v1.ProtocolUDP, 53)}},
		{"good-tiny-1", 1, []framework.ServiceOption{framework.WithAnnotation(string(annotation.NamePool), "tiny")}},
		{"good-tiny-2", 1, []framework.ServiceOption{framework.WithAnnotation(string(annotation.NamePool), "tiny")}},
		// No protocol is refused: the provider only hands out addresses.
		{"good-sctp", 1, []framework.ServiceOption{framework.WithPort(v1.ProtocolSCTP, 9899)}},
	} {
		good[g.name] = waitIPs(t, ns, createLB(t, ns, g.name, g.opts...).Name, g.n, 20*time.Second)
	}
	ips := string(annotation.NameLoadBalancerIPs)
	pool := string(annotation.NamePool)
	share := framework.WithAnnotation(string(annotation.NameSharingKey), "dns")

	for _, tc := range []struct {
		name, reason string
		opts         []framework.ServiceOption
	}{
		{"ips-garbage", metal.ReasonInvalidAnnotation, []framework.ServiceOption{framework.WithAnnotation(ips, "not-an-ip")}},
		{"ips-two-ipv4", metal.ReasonInvalidAnnotation, []framework.ServiceOption{framework.WithAnnotation(ips, "198.18.134.5,198.18.134.6")}},
		{"ips-empty-item", metal.ReasonInvalidAnnotation, []framework.ServiceOption{framework.WithAnnotation(ips, "198.18.134.5,")}},
		{"ips-zone", metal.ReasonInvalidAnnotation, []framework.ServiceOption{framework.WithAnnotation(ips, "fe80::1%eth0"), framework.IPv6Only}},
		{"ips-cidr", metal.ReasonInvalidAnnotation, []framework.ServiceOption{framework.WithAnnotation(ips, "198.18.134.0/29")}},
		{"ips-family-not-asked", metal.ReasonInvalidAnnotation, []framework.ServiceOption{framework.WithAnnotation(ips, "2001:db8:134::5")}},
		{"outside-pools", metal.ReasonIPNotInPool, []framework.ServiceOption{framework.WithAnnotation(ips, "198.18.150.1")}},
		{"lbip-outside-pools", metal.ReasonIPNotInPool, []framework.ServiceOption{framework.WithLoadBalancerIP("198.18.150.2")}},
		{"ip-of-another-pool", metal.ReasonIPNotInPool, []framework.ServiceOption{framework.WithAnnotation(ips, "198.18.134.5"), framework.WithAnnotation(pool, "tiny")}},
		{"ip-taken", metal.ReasonIPInUse, []framework.ServiceOption{framework.WithAnnotation(ips, good["good"][0])}},
		{"ip-taken-other-key", metal.ReasonIPInUse, []framework.ServiceOption{framework.WithAnnotation(string(annotation.NameSharingKey), "other"),
			framework.WithPort(v1.ProtocolTCP, 53), framework.WithAnnotation(ips, good["good-share"][0])}},
		{"port-clash", metal.ReasonSharingClash, []framework.ServiceOption{share, framework.WithPort(v1.ProtocolUDP, 53), framework.WithAnnotation(ips, good["good-share"][0])}},
		{"policy-clash", metal.ReasonSharingClash, []framework.ServiceOption{share, framework.WithPort(v1.ProtocolTCP, 53), framework.Local,
			framework.WithAnnotation(ips, good["good-share"][0])}},
		{"unknown-pool", metal.ReasonUnknownPool, []framework.ServiceOption{framework.WithAnnotation(pool, "nope")}},
		{"garbage-pool", metal.ReasonUnknownPool, []framework.ServiceOption{framework.WithAnnotation(pool, "../../Not A Name!")}},
		{"pool-not-allowed", metal.ReasonPoolNotAllowed, []framework.ServiceOption{framework.WithAnnotation(pool, "elsewhere")}},
		{"no-pool-for-family", metal.ReasonNoPoolForFamily, []framework.ServiceOption{framework.WithAnnotation(pool, "v4only"), framework.IPv6Only}},
		{"pool-exhausted", metal.ReasonPoolExhausted, []framework.ServiceOption{framework.WithAnnotation(pool, "tiny")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			createLB(t, ns, tc.name, tc.opts...)
			ev := waitEvent(t, ns, tc.name, tc.reason)
			if ev.Type != v1.EventTypeWarning || ev.Source.Component != eventSource {
				t.Errorf("Event %s: type %s from %s", ev.Reason, ev.Type, ev.Source.Component)
			}
			for _, e := range providerEvents(t, ns, tc.name) {
				if e.Reason != tc.reason {
					t.Errorf("also an Event %s: %s", e.Reason, e.Message)
				}
			}
			s, err := client.CoreV1().Services(ns).Get(context.Background(), tc.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := framework.IngressIPs(s); len(got) != 0 {
				t.Errorf("the refused Service got addresses %v", got)
			}
		})
	}

	// A refused Service fixed by its owner gets its address.
	s, err := client.CoreV1().Services(ns).Get(context.Background(), "ips-garbage", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(s.Annotations, ips)
	if _, err := client.CoreV1().Services(ns).Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitIPs(t, ns, "ips-garbage", 1, 20*time.Second)

	// Nothing else was disturbed.
	for name, want := range good {
		if got := waitIPs(t, ns, name, len(want), time.Second); !slices.Equal(got, want) {
			t.Errorf("the address of %s changed: %v -> %v", name, want, got)
		}
		for _, e := range providerEvents(t, ns, name) {
			if e.Type == v1.EventTypeWarning {
				t.Errorf("a good Service got a Warning: %s %s", e.Reason, e.Message)
			}
		}
	}
	if ccm.Exited() || ccm.PID() != pid {
		t.Fatalf("the CCM did not survive the bad Services")
	}
	if m := regexp.MustCompile(`(?i).*(panic|runtime error|goroutine \d+ \[).*`).FindAllString(ccm.Log(), 5); len(m) > 0 {
		t.Errorf("the CCM's log shows a panic:\n%v", m)
	}
}
