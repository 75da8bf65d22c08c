package metal

import (
	"context"

	"k8s.io/client-go/dynamic"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
)

// startPowerSource builds the power-state source again, now with a cluster
// client and the leader's context: a source that reads the cluster
// (metal3, rufio) was built without one by New, which runs before the
// replica leads, and answered ErrNoCluster until now. Later reloads build
// theirs with the same environment.
func (c *Cloud) startPowerSource(ctx context.Context, clientBuilder cloudprovider.ControllerClientBuilder) {
	logger := klog.FromContext(ctx)
	cfg, err := clientBuilder.Config("metal-cloud-provider")
	if err != nil {
		logger.Error(err, "Power-state sources that read the cluster will not answer: no API client")
		return
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		logger.Error(err, "Power-state sources that read the cluster will not answer: no dynamic client")
		return
	}
	c.swap.Lock()
	defer c.swap.Unlock()
	env := powerstate.Env{Dynamic: dyn, Context: ctx}
	c.env.Store(&env)
	old := c.state.Load()
	ps := old.cfg.Nodes.PowerState
	power, err := powerstate.New(ps.Source, ps.Settings, env)
	if err != nil {
		// The same settings were accepted without a client: only the
		// client can be at fault, and the old source goes on.
		logger.Error(err, "Cannot build the power-state source with the cluster client", "source", ps.Source)
		return
	}
	st := *old
	st.power, st.memo = power, newPowerMemo(env.Ctx(), power)
	c.state.Store(&st)
	if err := old.power.Close(); err != nil {
		logger.Error(err, "Cannot close the replaced power-state source")
	}
}
