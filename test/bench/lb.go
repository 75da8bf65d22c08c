package bench

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// labNodeName is the name of the node at the router lab's node address i.
func labNodeName(i int) string { return fmt.Sprintf("lab-%d", i) }

// labHops are the next hops of every announcement: the first labNodes lab
// node addresses.
func labHops() []netip.Addr {
	out := make([]netip.Addr, labNodes)
	for i := range out {
		out[i] = netlab.NodeAddr(netlab.IPv4, i)
	}
	return out
}

// ensureLabNodes registers the nodes at the lab's node addresses (the same
// addresses without a router) and waits until they are initialized.
func (e *env) ensureLabNodes(ctx context.Context) error {
	if e.labReady {
		return nil
	}
	names := make([]string, labNodes)
	for i := range names {
		names[i] = labNodeName(i)
	}
	if _, err := e.registerNodes(ctx, names, labHops(), true); err != nil {
		return err
	}
	if err := e.waitInitialized(ctx, names); err != nil {
		return err
	}
	e.labReady = true
	return nil
}

// prefixesOf returns the host prefixes of the Services' addresses known so
// far; nil until every Service has one.
func (e *env) prefixesOf(keys []string) func() []netip.Prefix {
	return func() []netip.Prefix {
		_, addrs := e.w.ipTimes(keys)
		if len(addrs) < len(keys) {
			return nil
		}
		out := make([]netip.Prefix, 0, len(addrs))
		for _, a := range addrs {
			out = append(out, netlab.HostPrefix(a))
		}
		return out
	}
}

// lbStorm is scenario 2: LBServices LoadBalancer Services created at once;
// how long until all have an address, and until the router has every route.
func (e *env) lbStorm(ctx context.Context, s *Scenario) error {
	if err := e.ensureLabNodes(ctx); err != nil {
		return err
	}
	n := e.o.LBServices
	keys := serviceKeys("bench-lb", "lb", n)
	if err := framework.EnsureNamespace(ctx, e.cs, "bench-lb"); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	before, err := e.sample(ctx)
	if err != nil {
		return err
	}
	router := e.watchRouter(ctx, "every route", everyRoute(e.prefixesOf(keys), labHops()))
	defer router.stop()
	began, err := e.createServices(ctx, keys, false)
	if err != nil {
		return err
	}
	created := time.Now()
	if err := e.waitAddresses(ctx, keys); err != nil {
		return err
	}
	e.lbKeys = keys
	times, _ := e.w.ipTimes(keys)
	lastStatus := latest(times)
	lat := make([]time.Duration, 0, n)
	for _, k := range keys {
		lat = append(lat, times[k].Sub(began[k]))
	}
	scaled := n < goalLBServices
	s.add("services_with_ip", "Services with an address", float64(len(times)), "count")
	if err := e.addDuplicates(ctx, s); err != nil {
		return err
	}
	all := s.add("all_ip_s", "time until all have an address", lastStatus.Sub(before.at).Seconds(), "s")
	s.add("created_s", "(the harness created them all in)", created.Sub(before.at).Seconds(), "s").
		withFloor(e.floors.lbCreate.Seconds())
	s.add("after_created_s", "all have an address, after the last creation", lastStatus.Sub(created).Seconds(), "s")
	s.add("p50_s", "per Service, p50", percentile(lat, 0.50).Seconds(), "s")
	s.add("p99_s", "per Service, p99", percentile(lat, 0.99).Seconds(), "s")
	if err := e.announced(ctx, s, before, lastStatus, router, e.prefixesOf(keys)(), scaled); err != nil {
		return err
	}
	// The leader writes each new Service's conditions after the storm
	// (addresses first): they are this scenario's writes, not the next one's.
	after, err := e.settleWithin(ctx, statusDrainMax)
	if err != nil {
		return err
	}
	d := before.to(after)
	all.withFloor(e.floors.lb.Seconds()).ratioAtMost(2, scaled)
	s.add("api_requests", "CCM API requests", d.requests, "req")
	s.add("api_writes_per_service", "CCM API writes per Service", d.writes/float64(n), "per item")
	cpuFigures(s, d)
	s.notef("the floor is a trivial controller writing one address into the status of the same number of Services, created " +
		"the same way, with one patch each and the CCM's client limits, before the CCM starts; the floor of the creation line " +
		"is the harness's creation during the floor")
	return nil
}

// announced adds how long after the last status write the speaker had
// announced every prefix (from its log) and the router had every route.
func (e *env) announced(ctx context.Context, s *Scenario, before sample, lastStatus time.Time, router *routerWatch, prefixes []netip.Prefix, scaled bool) error {
	if e.ours() {
		sw := e.speakerFrom(before.logOffset)
		at, err := e.waitSpeaker(ctx, sw, prefixes, func(c pathChange) bool { return c.added > 0 })
		if err != nil {
			return err
		}
		s.add("speaker_after_status_s", "speaker announced all, after the last status write", at.Sub(lastStatus).Seconds(), "s")
	}
	if router == nil {
		s.notef("router figures skipped: %s", e.noRouter)
		return nil
	}
	at, err := router.wait()
	if err != nil {
		return err
	}
	s.add("router_all_s", "router has every route", at.Sub(before.at).Seconds(), "s")
	s.add("router_after_status_s", "router has every route, after the last status write", at.Sub(lastStatus).Seconds(), "s").
		atMost(1, "≤ 1 s", scaled)
	return nil
}

// ensureLBServices returns the LoadBalancer storm's Services, creating them
// when that scenario did not run.
func (e *env) ensureLBServices(ctx context.Context) ([]string, error) {
	if e.lbKeys != nil {
		return e.lbKeys, nil
	}
	keys := serviceKeys("bench-lb", "lb", e.o.LBServices)
	if _, err := e.createServices(ctx, keys, false); err != nil {
		return nil, err
	}
	if err := e.waitAddresses(ctx, keys); err != nil {
		return nil, err
	}
	e.lbKeys = keys
	return keys, nil
}
