package bench

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// churnNode is the node that joins and leaves under load.
const churnNode = "churn-0"

// nodeChurn is scenario 3: with the LoadBalancer storm's Services announced,
// a node joins, then is deleted; how long until the router's routes follow,
// and how many BGP updates and provider calls it takes (they should grow with
// the Services, not with Services × nodes).
func (e *env) nodeChurn(ctx context.Context, s *Scenario) error {
	if err := e.ensureLabNodes(ctx); err != nil {
		return err
	}
	keys, err := e.ensureLBServices(ctx)
	if err != nil {
		return err
	}
	n := float64(len(keys))
	prefixes := e.prefixesOf(keys)()
	fixed := func() []netip.Prefix { return prefixes }
	hops := labHops()
	extra := netlab.NodeAddr(netlab.IPv4, labNodes)
	scaled := len(keys) < goalLBServices
	if _, err := e.settle(ctx); err != nil {
		return err
	}

	// The node joins.
	before, err := e.sample(ctx)
	if err != nil {
		return err
	}
	router := e.watchRouter(ctx, "the new next hop on every route", everyRoute(fixed, append(slices.Clone(hops), extra)))
	defer router.stop()
	if _, err := e.registerNodes(ctx, []string{churnNode}, []netip.Addr{extra}, true); err != nil {
		return err
	}
	if err := e.waitInitialized(ctx, []string{churnNode}); err != nil {
		return err
	}
	initAt := e.w.initTimes([]string{churnNode})[churnNode]
	joined := s.add("join_initialized_s", "join: node initialized", initAt.Sub(before.at).Seconds(), "s")
	if err := e.followed(ctx, s, "join", before, initAt, router, prefixes, func(c pathChange) bool { return c.added > 0 }, scaled); err != nil {
		return err
	}
	mid, err := e.settle(ctx)
	if err != nil {
		return err
	}

	// The node leaves.
	router = e.watchRouter(ctx, "the next hop gone from every route", everyRoute(fixed, hops))
	defer router.stop()
	deleted := time.Now()
	if err := e.cs.CoreV1().Nodes().Delete(ctx, churnNode, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("bench: delete node %s: %w", churnNode, err)
	}
	if err := e.followed(ctx, s, "leave", mid, deleted, router, prefixes, func(c pathChange) bool { return c.withdrawn > 0 }, scaled); err != nil {
		return err
	}
	after, err := e.settle(ctx)
	if err != nil {
		return err
	}

	join, leave := before.to(mid), mid.to(after)
	if e.lab != nil {
		s.add("join_bgp_updates_per_service", "join: paths the router received, per Service", join.bgpUpdates/n, "per item").
			atMost(1, "≤ 1 per Service", scaled)
		s.add("leave_bgp_withdraws_per_service", "leave: withdrawals the router received, per Service", leave.bgpWithdraws/n, "per item").
			atMost(1, "≤ 1 per Service", scaled)
	}
	s.add("join_provider_calls_per_service", "join: service controller syncs, per Service", join.lbSyncs/n, "per item").
		atMost(1, "≤ 1 per Service", scaled)
	s.add("leave_provider_calls_per_service", "leave: service controller syncs, per Service", leave.lbSyncs/n, "per item").
		atMost(1, "≤ 1 per Service", scaled)
	s.add("join_api_requests", "join: CCM API requests", join.requests, "req")
	s.add("leave_api_requests", "leave: CCM API requests", leave.requests, "req")
	cpuFigures(s, before.to(after))
	floor, err := e.labelFloor(ctx, kindNode, []string{labNodeName(0)})
	if err != nil {
		return err
	}
	joined.withFloor(floor.Seconds())
	s.notef("the join's floor is one label patch of a node; the router and speaker times run from the node's initialization " +
		"(join) or its deletion (leave); service controller syncs are the upstream service controller's " +
		"UpdateLoadBalancer calls (service_controller_loadbalancer_sync_total) or our service controller's syncs (metal_ccm_service_syncs_total)")
	return nil
}

// followed adds how long after from the speaker had changed every prefix
// (from its log) and the router had the wanted routes.
func (e *env) followed(ctx context.Context, s *Scenario, phase string, before sample, from time.Time, router *routerWatch,
	prefixes []netip.Prefix, match func(pathChange) bool, scaled bool) error {
	if e.ours() {
		sw := e.speakerFrom(before.logOffset)
		at, err := e.waitSpeaker(ctx, sw, prefixes, match)
		if err != nil {
			return err
		}
		s.add(phase+"_speaker_s", phase+": speaker changed every prefix, after", at.Sub(from).Seconds(), "s")
		s.add(phase+"_speaker_changes_per_service", phase+": speaker path changes, per Service",
			float64(sw.changes)/float64(len(prefixes)), "per item")
	}
	if router == nil {
		if phase == "join" {
			s.notef("router figures skipped: %s", e.noRouter)
		}
		return nil
	}
	at, err := router.wait()
	if err != nil {
		return err
	}
	s.add(phase+"_router_s", phase+": router's routes follow, after", at.Sub(from).Seconds(), "s").atMost(1, "≤ 1 s", scaled)
	return nil
}
