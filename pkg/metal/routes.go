package metal

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/replica"
)

var _ cloudprovider.Routes = (*Cloud)(nil)

// Errors of CreateRoute.
var (
	// ErrNoNextHop: the node has no address of the configured type and of the
	// pod CIDR's family to route to.
	ErrNoNextHop = errors.New("node has no address to use as next hop")
	// ErrNotAnnounced: the route was not announced in time.
	ErrNotAnnounced = errors.New("route not announced yet")
	// ErrNoSpeaker: routes are enabled but the speaker is not running.
	ErrNoSpeaker = errors.New("BGP speaker not running")
)

// routes is the route source of this replica, or nil before the runtime
// has started one.
func (c *Cloud) routes() replica.RouteSource { return c.replica.RouteSource() }

// routeWait bounds how long CreateRoute and DeleteRoute wait for the
// announcer, which follows the nodes' spec.podCIDRs by itself.
const routeWait = 10 * time.Second

// Routes is offered when routes.enabled is set.
func (c *Cloud) Routes() (cloudprovider.Routes, bool) {
	if !c.state.Load().cfg.Routes.Enabled {
		return nil, false
	}
	return c, true
}

// ListRoutes reports the pod routes in place: those this replica announces
// (every replica announces the same ones from the nodes' spec.podCIDRs,
// whoever leads), or with announceFrom Nodes those of the nodes whose agent
// is Ready.
func (c *Cloud) ListRoutes(context.Context, string) ([]*cloudprovider.Route, error) {
	ann := c.routes()
	if ann == nil {
		return nil, fmt.Errorf("list routes: %w", ErrNoSpeaker)
	}
	var out []*cloudprovider.Route
	for _, r := range ann.NodeRoutes() {
		out = append(out, &cloudprovider.Route{
			Name:            r.Node + "-" + r.CIDR.String(),
			TargetNode:      types.NodeName(r.Node),
			DestinationCIDR: r.CIDR.String(),
		})
	}
	return out, nil
}

// CreateRoute waits until the announcer (or the node's agent) announces the
// node's pod CIDR (it does so from the node's spec.podCIDRs), or fails when the node has no
// address to route to, so that the route controller keeps the node's
// NetworkUnavailable condition True.
func (c *Cloud) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	ann := c.routes()
	if ann == nil {
		return fmt.Errorf("create route %s: %w", route.DestinationCIDR, ErrNoSpeaker)
	}
	cidr, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("create route %s: %w", route.DestinationCIDR, err)
	}
	node := string(route.TargetNode)
	if _, ok := ann.NextHopFor(node, cidr.Addr().Is4()); !ok {
		return fmt.Errorf("create route %s to node %s: %w", cidr, node, ErrNoNextHop)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, routeWait, true, func(context.Context) (bool, error) {
		return c.announces(node, cidr.Masked()), nil
	})
	if err != nil {
		return fmt.Errorf("create route %s to node %s: %w", cidr, node, ErrNotAnnounced)
	}
	klog.FromContext(ctx).V(2).Info("Pod route announced", "node", node, "cidr", cidr)
	return nil
}

// DeleteRoute waits until the route is withdrawn, which the announcer does
// when the node or its pod CIDR goes.
func (c *Cloud) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	cidr, err := netip.ParsePrefix(route.DestinationCIDR)
	if err != nil {
		return fmt.Errorf("delete route %s: %w", route.DestinationCIDR, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, routeWait, true, func(context.Context) (bool, error) {
		return !c.announces(string(route.TargetNode), cidr.Masked()), nil
	})
	if err != nil {
		return fmt.Errorf("delete route %s of node %s: still announced: %w", cidr, route.TargetNode, err)
	}
	return nil
}

func (c *Cloud) announces(node string, cidr netip.Prefix) bool {
	ann := c.routes()
	if ann == nil {
		return false
	}
	for _, r := range ann.NodeRoutes() {
		if r.Node == node && r.CIDR == cidr {
			return true
		}
	}
	return false
}
