package config

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
)

// Default values of optional fields.
const (
	DefaultInstanceType       = "metal"
	DefaultDiscoveryPolicy    = DiscoveryAccept
	DefaultPowerStateSource   = "none"
	DefaultBGPPort            = limits.DefaultPort
	DefaultHoldTime           = limits.DefaultHoldTime
	DefaultRestartTime        = limits.DefaultRestartTime
	DefaultMaxPathsPerAddress = 16
	DefaultStopMode           = StopAuto
	DefaultAnnounceFrom       = AnnounceFromReplicas
	DefaultMemberlistPort     = 7946
	DefaultFailback           = FailbackRebalance

	DefaultHealthCheckPort         = 10256
	DefaultHealthCheckInterval     = time.Second
	DefaultHealthCheckTimeout      = 400 * time.Millisecond
	DefaultHealthCheckHTTPInterval = 10 * time.Second
	DefaultFailuresToWithdraw      = 2
	DefaultSuccessesToReturn       = 2
	MinHealthCheckDuration         = 100 * time.Millisecond
	MaxHealthCheckDuration         = time.Minute
	MaxHealthCheckResultsInARow    = 10

	DefaultStatusMinInterval = 10 * time.Second
	// The out-of-service taint's confirmation time, and its bounds.
	DefaultOutOfServiceConfirmFor = 10 * time.Second
	MinOutOfServiceConfirmFor     = time.Second
	MaxOutOfServiceConfirmFor     = 10 * time.Minute
	// Fencing's NotReady time and limit, and their bounds.
	DefaultFencingAfter          = 60 * time.Second
	MinFencingAfter              = time.Second
	MaxFencingAfter              = time.Hour
	DefaultFencingMaxNodes       = 1
	MinStatusMinInterval         = time.Second
	MaxStatusMinInterval         = 10 * time.Minute
	DefaultStatusWritesPerSecond = 20
	MaxStatusWritesPerSecond     = 100
)

// Default fills every optional field left empty with its default.
func (c *CloudConfig) Default() {
	n := &c.Nodes
	if n.DefaultInstanceType == "" {
		n.DefaultInstanceType = DefaultInstanceType
	}
	if n.Discovery.Policy == "" {
		n.Discovery.Policy = DefaultDiscoveryPolicy
	}
	if n.PowerState.Source == "" {
		n.PowerState.Source = DefaultPowerStateSource
	}
	if n.PowerState.OutOfService.ConfirmFor == nil {
		n.PowerState.OutOfService.ConfirmFor = &metav1.Duration{Duration: DefaultOutOfServiceConfirmFor}
	}
	if n.PowerState.OutOfService.DeletePods == nil {
		// The fast path's pods would otherwise wait for the node to be
		// NotReady as well: the pod garbage collector's condition.
		n.PowerState.OutOfService.DeletePods = ptr.To(n.PowerState.OutOfService.FastPath)
	}
	if n.PowerState.Fencing.After == nil {
		n.PowerState.Fencing.After = &metav1.Duration{Duration: DefaultFencingAfter}
	}
	if n.PowerState.Fencing.MaxNodes == nil {
		n.PowerState.Fencing.MaxNodes = ptr.To[int32](DefaultFencingMaxNodes)
	}
	for i := range n.Inventory {
		m := &n.Inventory[i]
		if m.ID == "" {
			m.ID = m.Name
		}
		if m.InstanceType == "" {
			m.InstanceType = n.DefaultInstanceType
		}
	}
	if c.Routes.NextHopAddressType == "" {
		c.Routes.NextHopAddressType = v1.NodeInternalIP
	}
	for i := range c.LoadBalancer.Pools {
		p := &c.LoadBalancer.Pools[i]
		if p.AutoAssign == nil {
			p.AutoAssign = ptr.To(true)
		}
		if len(p.Announce) == 0 {
			p.Announce = []Protocol{ProtocolBGP}
		}
	}
	c.HealthChecks.defaults()
	if c.ServiceStatus.MinInterval == nil {
		c.ServiceStatus.MinInterval = &metav1.Duration{Duration: DefaultStatusMinInterval}
	}
	if c.ServiceStatus.WritesPerSecond == 0 {
		c.ServiceStatus.WritesPerSecond = DefaultStatusWritesPerSecond
	}
	if c.L2.MemberlistPort == 0 {
		c.L2.MemberlistPort = DefaultMemberlistPort
	}
	if c.L2.Failback == "" {
		c.L2.Failback = DefaultFailback
	}
	if c.BGP.AnnounceFrom == "" {
		c.BGP.AnnounceFrom = DefaultAnnounceFrom
	}
	if c.BGP.OnStop == "" {
		c.BGP.OnStop = DefaultStopMode
	}
	if c.BGP.MaxPathsPerAddress == 0 {
		c.BGP.MaxPathsPerAddress = DefaultMaxPathsPerAddress
	}
	for i := range c.BGP.Peers {
		p := &c.BGP.Peers[i]
		if p.Port == 0 {
			p.Port = DefaultBGPPort
		}
		if p.HoldTime == nil {
			p.HoldTime = &metav1.Duration{Duration: DefaultHoldTime}
		}
		if p.GracefulRestart == nil {
			p.GracefulRestart = &GracefulRestart{}
		}
		if p.GracefulRestart.Enabled == nil {
			p.GracefulRestart.Enabled = ptr.To(true)
		}
		if b := p.BFD; b != nil {
			if b.ReceiveInterval.Duration == 0 {
				b.ReceiveInterval.Duration = limits.DefaultBFDInterval
			}
			if b.TransmitInterval.Duration == 0 {
				b.TransmitInterval.Duration = limits.DefaultBFDInterval
			}
			if b.Multiplier == 0 {
				b.Multiplier = limits.DefaultBFDMultiplier
			}
		}
		if p.PodRoutes == nil {
			p.PodRoutes = ptr.To(true)
		}
		if p.GracefulRestart.RestartTime == nil {
			p.GracefulRestart.RestartTime = &metav1.Duration{Duration: DefaultRestartTime}
		}
	}
}

func (h *HealthChecks) defaults() {
	if h.Enabled == nil {
		h.Enabled = ptr.To(true)
	}
	if h.Port == 0 {
		h.Port = DefaultHealthCheckPort
	}
	if h.Interval == nil {
		h.Interval = &metav1.Duration{Duration: DefaultHealthCheckInterval}
	}
	if h.Timeout == nil {
		h.Timeout = &metav1.Duration{Duration: DefaultHealthCheckTimeout}
	}
	if h.HTTPInterval == nil {
		h.HTTPInterval = &metav1.Duration{Duration: max(DefaultHealthCheckHTTPInterval, h.Interval.Duration)}
	}
	if h.FailuresToWithdraw == 0 {
		h.FailuresToWithdraw = DefaultFailuresToWithdraw
	}
	if h.SuccessesToReturn == 0 {
		h.SuccessesToReturn = DefaultSuccessesToReturn
	}
}
