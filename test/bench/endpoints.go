package bench

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// endpointChurn is scenario 4: LocalServices Services with
// externalTrafficPolicy Local have their one endpoint on a node; it moves to
// another node; how long until every address's next hop follows.
func (e *env) endpointChurn(ctx context.Context, s *Scenario) error {
	if err := e.ensureLabNodes(ctx); err != nil {
		return err
	}
	n := e.o.LocalServices
	keys := serviceKeys("bench-local", "local", n)
	if _, err := e.createServices(ctx, keys, true); err != nil {
		return err
	}
	if err := e.waitAddresses(ctx, keys); err != nil {
		return err
	}
	e.localKeys = keys
	prefixes := e.prefixesOf(keys)()
	fixed := func() []netip.Prefix { return prefixes }
	from, to := netlab.NodeAddr(netlab.IPv4, 0), netlab.NodeAddr(netlab.IPv4, 1)

	// Every Service gets its endpoint on the first node.
	setup, err := e.sample(ctx)
	if err != nil {
		return err
	}
	router := e.watchRouter(ctx, "every route via the first node", everyRoute(fixed, []netip.Addr{from}))
	defer router.stop()
	err = parallel(ctx, n, harnessWorkers, func(ctx context.Context, i int) error {
		sl := endpointSlice(keys[i], labNodeName(0), i)
		if _, err := e.cs.DiscoveryV1().EndpointSlices(sl.Namespace).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("bench: create EndpointSlice of %s: %w", keys[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := e.announcedVia(ctx, setup, router, prefixes, func(c pathChange) bool { return c.added > 0 }); err != nil {
		return err
	}
	before, err := e.settle(ctx)
	if err != nil {
		return err
	}

	// The endpoints move to the second node.
	router = e.watchRouter(ctx, "every route via the second node", everyRoute(fixed, []netip.Addr{to}))
	defer router.stop()
	patch := fmt.Appendf(nil, `{"endpoints":[{"addresses":["198.19.255.1"],"nodeName":%q,"conditions":{"ready":true}}]}`, labNodeName(1))
	err = parallel(ctx, n, harnessWorkers, func(ctx context.Context, i int) error {
		ns, name := splitKey(keys[i])
		_, err := e.cs.DiscoveryV1().EndpointSlices(ns).Patch(ctx, name+"-bench", types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("bench: move the endpoint of %s: %w", keys[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	lastWrite := time.Now()
	var followed time.Time
	if e.ours() {
		sw := e.speakerFrom(before.logOffset)
		at, err := e.waitSpeaker(ctx, sw, prefixes, func(c pathChange) bool { return c.withdrawn > 0 })
		if err != nil {
			return err
		}
		followed = at
		s.add("speaker_after_writes_s", "speaker moved every next hop, after the last write", at.Sub(lastWrite).Seconds(), "s")
	}
	if router != nil {
		at, err := router.wait()
		if err != nil {
			return err
		}
		followed = at
		s.add("router_after_writes_s", "router moved every next hop, after the last write", at.Sub(lastWrite).Seconds(), "s").
			atMost(1, "≤ 1 s", false)
	} else {
		s.notef("router figures skipped: %s", e.noRouter)
	}
	after, err := e.settle(ctx)
	if err != nil {
		return err
	}
	floor, err := e.labelFloor(ctx, kindSlice, endpointSliceKeys(keys))
	if err != nil {
		return err
	}
	if !followed.IsZero() {
		s.add("followed_s", "next hops followed, from the first write", followed.Sub(before.at).Seconds(), "s").withFloor(floor.Seconds())
	}
	s.add("writes_s", "(the harness moved them all in)", lastWrite.Sub(before.at).Seconds(), "s")
	d := before.to(after)
	s.add("api_requests", "CCM API requests", d.requests, "req")
	cpuFigures(s, d)
	s.notef("the harness moves the endpoints with its own client; the floor is %d label patches of the EndpointSlices with the CCM's client limits", n)
	return nil
}

// announcedVia waits until the speaker (from its log) and the router have
// taken in the setup's change of every prefix.
func (e *env) announcedVia(ctx context.Context, setup sample, router *routerWatch, prefixes []netip.Prefix, match func(pathChange) bool) error {
	if e.ours() {
		if _, err := e.waitSpeaker(ctx, e.speakerFrom(setup.logOffset), prefixes, match); err != nil {
			return err
		}
	}
	if router != nil {
		if _, err := router.wait(); err != nil {
			return err
		}
	}
	return nil
}

// endpointSliceKeys are the keys of the Services' EndpointSlices.
func endpointSliceKeys(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k + "-bench"
	}
	return out
}
