package metal

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/pkg/fencing"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// fencingPeriod is how often the leader looks at the nodes for fencing
// (from its cache; it asks the power-state source only about the nodes
// due, and reads those again from the API server before a power-off).
const fencingPeriod = 2 * time.Second

// runFencing runs the fencing of NotReady nodes (nodes.powerState.fencing)
// on the leader until ctx ends, which is when the replica stops leading:
// no power-off is ordered after that. It always runs, so that the marks of
// fenced nodes go when they are Ready again, even after a reload turned
// fencing off.
func (c *Cloud) runFencing(ctx context.Context, client kubernetes.Interface) {
	select {
	case <-ctx.Done():
		return
	case <-c.lb.informed: // SetInformers gave the nodes
	}
	ctrl := &fencing.Controller{
		Nodes:    c.nodes,
		Client:   client,
		Off:      c.InstanceShutdown,
		PowerOff: c.powerOff,
		Settings: func() fencing.Settings {
			ps := c.state.Load().cfg.Nodes.PowerState
			f := ps.Fencing
			s := fencing.Settings{Enabled: f.Enabled, DryRun: f.DryRun, Source: ps.Source, MaxNodes: 1}
			if f.After != nil {
				s.After = f.After.Duration
			}
			if f.MaxNodes != nil {
				s.MaxNodes = int(*f.MaxNodes)
			}
			s.MaxShare, _ = f.MaxSharePercent() // validated with the config
			return s
		},
		Event: func(n *v1.Node, eventType, reason, format string, args ...any) {
			c.eventf(n, eventType, reason, format, args...)
		},
		Period: fencingPeriod,
	}
	defer c.watchNodeUpdates(ctx, "fencing", ctrl.NodeChanged)()
	ctrl.Run(ctx)
}

// powerOff powers the node's machine off through the configured source,
// with the machine's inventory id and settings.
func (c *Cloud) powerOff(ctx context.Context, node *v1.Node) error {
	st := c.state.Load()
	f, ok := st.power.(powerstate.Fencer)
	if !ok {
		return fmt.Errorf("power-state source %s cannot power machines off", st.cfg.Nodes.PowerState.Source)
	}
	m := powerstate.Machine{Node: node}
	if entry, ok := st.nodes.machineFor(node); ok {
		m.ID, m.Settings = entry.ID, entry.PowerState
	}
	if err := f.PowerOff(ctx, m); err != nil {
		return err
	}
	// The last answer said On: the next question asks the BMC again.
	st.memo.forget(node.Name)
	return nil
}
