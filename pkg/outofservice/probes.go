package outofservice

import (
	"context"
	"net/netip"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/healthcheck"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// Probes are the leader's checks of the nodes' kube-proxy for the fast
// path: the same checks (healthcheck.Checker) and settings as the
// announcer's, of every node, whether it carries a LoadBalancer address or
// not: a node whose kube-proxy does not answer is asked about at once.
type Probes struct {
	notify func()

	mu      sync.Mutex
	opts    healthcheck.Options
	port    uint16
	checker *healthcheck.Checker
	cancel  context.CancelFunc
	done    chan struct{}
	targets map[string]netip.AddrPort // node name → its kube-proxy
}

// NewProbes returns probes that call notify (without a lock held) when a
// node's check changes state.
func NewProbes(notify func()) *Probes {
	return &Probes{notify: notify, targets: map[string]netip.AddrPort{}}
}

// Update makes the probes those of s (none when the fast path is off) for
// nodes. A change of the checks' settings starts the checks again; ctx
// bounds them.
func (p *Probes) Update(ctx context.Context, s Settings, list []*v1.Node) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !s.FastPath || ctx.Err() != nil {
		p.stopLocked()
		return
	}
	if p.checker != nil && (p.opts != s.Checks || p.port != s.ProxyPort) {
		p.stopLocked()
	}
	if p.checker == nil {
		p.opts, p.port = s.Checks, s.ProxyPort
		p.checker = healthcheck.New(s.Checks, func(netip.AddrPort) {
			if p.notify != nil {
				p.notify()
			}
		}, nil)
		cctx, cancel := context.WithCancel(ctx)
		p.cancel, p.done = cancel, make(chan struct{})
		go func(c *healthcheck.Checker, done chan struct{}) {
			defer close(done)
			c.Run(cctx)
		}(p.checker, p.done)
	}
	clear(p.targets)
	all := make([]netip.AddrPort, 0, len(list))
	for _, n := range list {
		if t, ok := target(n, s.ProxyPort); ok {
			p.targets[n.Name] = t
			all = append(all, t)
		}
	}
	p.checker.Set(all)
}

// target is where a node's kube-proxy is checked: its first IPv4
// InternalIP, else its first IPv6 one, as the announcer's checks.
func target(n *v1.Node, port uint16) (netip.AddrPort, bool) {
	for _, v4 := range []bool{true, false} {
		if ip, ok := nodes.InternalIP(n, v4); ok {
			return netip.AddrPortFrom(ip, port), true
		}
	}
	return netip.AddrPort{}, false
}

// State is node name's check: Unknown when it is not checked.
func (p *Probes) State(name string) healthcheck.State {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.targets[name]
	if !ok || p.checker == nil {
		return healthcheck.Unknown
	}
	return p.checker.State(t)
}

// Stop ends the checks and waits for them.
func (p *Probes) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopLocked()
}

func (p *Probes) stopLocked() {
	if p.checker == nil {
		return
	}
	p.cancel()
	<-p.done
	p.checker, p.cancel, p.done = nil, nil, nil
	clear(p.targets)
}
