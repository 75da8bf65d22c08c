package announcer

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// weighingSpeaker is a fakeSpeaker that also takes weights, and checks that
// a prefix's weights come before its new paths.
type weighingSpeaker struct {
	fakeSpeaker
	wmu     sync.Mutex
	weights map[netip.Prefix]map[netip.Addr]int
	early   []string // paths that came before their weights
}

func (w *weighingSpeaker) SetWeights(_ context.Context, p netip.Prefix, weights map[netip.Addr]int) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	if len(weights) == 0 {
		delete(w.weights, p)
	} else {
		w.weights[p] = maps.Clone(weights)
	}
	return nil
}

func (w *weighingSpeaker) SetPaths(ctx context.Context, p netip.Prefix, hops []netip.Addr) error {
	w.wmu.Lock()
	for _, h := range hops {
		if p.Addr().Is4() && w.weights[p][h] == 0 && p == netip.MustParsePrefix("198.18.100.2/32") {
			w.early = append(w.early, fmt.Sprint(p, " via ", h))
		}
	}
	w.wmu.Unlock()
	return w.fakeSpeaker.SetPaths(ctx, p, hops)
}

// getWeights writes p's weights as "hop=n" sorted by hop.
func (w *weighingSpeaker) getWeights(p string) string {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	ws := w.weights[netip.MustParsePrefix(p)]
	hops := slices.SortedFunc(maps.Keys(ws), netip.Addr.Compare)
	out := make([]string, 0, len(hops))
	for _, h := range hops {
		out = append(out, fmt.Sprintf("%s=%d", h, ws[h]))
	}
	return fmt.Sprint(out)
}

func endpoint(addr, node string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{addr}, NodeName: ptr.To(node), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}
}

// TestWeights checks the weights of weighted ECMP: the ready endpoints of a
// Local Service on each node that carries its address, counted once per
// family, following the EndpointSlices; none for a Cluster Service or an
// address Weighted leaves out.
func TestWeights(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := fake.NewClientset(
		node("n1", true, "198.18.10.11", "2001:db8:10::11"),
		node("n2", true, "198.18.10.12", "2001:db8:10::12"),
		node("n3", true, "198.18.10.13", "2001:db8:10::13"),
		lbService("local", true, "198.18.100.2", "2001:db8:100::2"),
		lbService("cluster", false, "198.18.100.3"),
		lbService("unweighted", true, "198.18.200.4"),
	)
	sp := &weighingSpeaker{fakeSpeaker: fakeSpeaker{paths: map[netip.Prefix][]netip.Addr{}}, weights: map[netip.Prefix]map[netip.Addr]int{}}
	f := informers.NewSharedInformerFactory(cs, 0)
	weighted := netip.MustParsePrefix("198.18.100.0/24")
	a := New(factoryInformers(f), sp, func(*v1.Service) bool { return true }, Options{
		Weighted: func(_ *v1.Service, addr netip.Addr) bool { return addr.Is6() || weighted.Contains(addr) },
	})
	f.Start(ctx.Done())
	go a.Run(ctx)

	slice := func(svc, name string, af discoveryv1.AddressType, eps ...discoveryv1.Endpoint) {
		t.Helper()
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: af, Endpoints: eps,
		}
		if _, err := cs.DiscoveryV1().EndpointSlices("ns").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			if _, err := cs.DiscoveryV1().EndpointSlices("ns").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 3 ready endpoints on n1 (one in two slices, as while the controller
	// moves it), 1 on n2 and a not-ready one on n3; IPv4 only.
	slice("local", "local-a", discoveryv1.AddressTypeIPv4,
		endpoint("198.19.1.1", "n1", true), endpoint("198.19.1.2", "n1", true), endpoint("198.19.2.1", "n2", true), endpoint("198.19.3.1", "n3", false))
	slice("local", "local-b", discoveryv1.AddressTypeIPv4, endpoint("198.19.1.2", "n1", true), endpoint("198.19.1.3", "n1", true))
	for _, svc := range []string{"cluster", "unweighted"} {
		slice(svc, svc, discoveryv1.AddressTypeIPv4, endpoint("198.19.9.1", "n1", true), endpoint("198.19.9.2", "n1", true), endpoint("198.19.9.3", "n2", true))
	}
	eventually(t, "weights 3:1", func() bool {
		return sp.get("198.18.100.2/32") == "[198.18.10.11 198.18.10.12]" &&
			sp.getWeights("198.18.100.2/32") == "[198.18.10.11=3 198.18.10.12=1]" &&
			// No IPv6 endpoint: the IPv4 ones weigh the IPv6 address too.
			sp.getWeights("2001:db8:100::2/128") == "[2001:db8:10::11=3 2001:db8:10::12=1]"
	})
	if len(sp.early) > 0 {
		t.Errorf("paths sent before their weights: %v", sp.early)
	}
	eventually(t, "the other Services announced", func() bool {
		return sp.get("198.18.100.3/32") == "[198.18.10.11 198.18.10.12 198.18.10.13]" && sp.get("198.18.200.4/32") == "[198.18.10.11 198.18.10.12]"
	})
	for _, p := range []string{"198.18.100.3/32", "198.18.200.4/32"} {
		if got := sp.getWeights(p); got != "[]" {
			t.Errorf("%s has weights %s, want none (Cluster, or not weighted)", p, got)
		}
	}

	// IPv6 endpoints of their own: 1 on n2, 2 on n3 (now ready).
	slice("local", "local-6", discoveryv1.AddressTypeIPv6, endpoint("2001:db8:19::1", "n2", true), endpoint("2001:db8:19::2", "n3", true), endpoint("2001:db8:19::3", "n3", true))
	// n3 now carries both addresses (the announcer does not tell the
	// families' endpoints apart); each family counts its own endpoints,
	// those of the other where a node has none of it.
	eventually(t, "IPv6 weighed by its own endpoints", func() bool {
		return sp.getWeights("2001:db8:100::2/128") == "[2001:db8:10::11=3 2001:db8:10::12=1 2001:db8:10::13=2]" &&
			sp.getWeights("198.18.100.2/32") == "[198.18.10.11=3 198.18.10.12=1 198.18.10.13=2]"
	})
	// n2 gets a second endpoint: its path is weighed again.
	slice("local", "local-a", discoveryv1.AddressTypeIPv4,
		endpoint("198.19.1.1", "n1", true), endpoint("198.19.1.2", "n1", true), endpoint("198.19.2.1", "n2", true), endpoint("198.19.2.2", "n2", true))
	eventually(t, "weights follow the endpoints", func() bool {
		return sp.getWeights("198.18.100.2/32") == "[198.18.10.11=3 198.18.10.12=2 198.18.10.13=2]"
	})
	// Cluster policy: the same next hops as every Service, no weights.
	svc, err := cs.CoreV1().Services("ns").Get(ctx, "local", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	if _, err := cs.CoreV1().Services("ns").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "no weights with Cluster", func() bool {
		return sp.getWeights("198.18.100.2/32") == "[]" && sp.getWeights("2001:db8:100::2/128") == "[]" &&
			sp.get("198.18.100.2/32") == "[198.18.10.11 198.18.10.12 198.18.10.13]"
	})
}

// TestAddWeights checks the merge of two Services sharing an address.
func TestAddWeights(t *testing.T) {
	a, b := netip.MustParseAddr("198.18.10.11"), netip.MustParseAddr("198.18.10.12")
	for _, tc := range []struct {
		name       string
		x, y, want hopWeights
	}{
		{"both", hopWeights{a: 1}, hopWeights{a: 2, b: 1}, hopWeights{a: 3, b: 1}},
		{"first empty", nil, hopWeights{b: 1}, hopWeights{b: 1}},
		{"second empty", hopWeights{a: 1}, nil, hopWeights{a: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := maps.Clone(tc.x)
			if got := addWeights(tc.x, tc.y); !maps.Equal(got, tc.want) {
				t.Errorf("addWeights = %v, want %v", got, tc.want)
			}
			if !maps.Equal(x, tc.x) {
				t.Errorf("addWeights modified its first argument: %v", tc.x)
			}
		})
	}
}
