package netlab

import "net/netip"

// frrRouter is FRR as a lab's router: zebra and bgpd, l.zebra and l.bgpd.
type frrRouter struct {
	l   *Lab
	cfg routerConfig
}

func (r *frrRouter) config() (string, error) { return r.cfg.frr() }

// prepareLinks gives each link an IPv6 link-local address: bgpd brings up
// no IPv6 session without one on the interface of the session address
// ("nexthop_set failed"; the session address on the loopback as well does
// not do), and the lab's links have none (addrgenmode none). It is the
// lab's only address outside its ranges: link-local, as every IPv6 link
// has by default, never routed and never a test's target.
func (r *frrRouter) prepareLinks(devs ...string) error {
	for _, dev := range devs {
		if err := ipn(r.l.Router, "-6", "addr", "add", "fe80::1/64", "dev", dev, "nodad"); err != nil {
			return err
		}
	}
	return nil
}

// start writes the configs and runs zebra, then bgpd, each until it
// answers on its vty socket, and bgpd until it has cfg.sessions neighbours.
func (r *frrRouter) start() error {
	conf, err := r.cfg.frr()
	if err != nil {
		return err
	}
	return r.l.runFRR(conf, r.cfg.sessions)
}

func (r *frrRouter) stop() { r.l.stopFRR() }

func (r *frrRouter) pid() int {
	if r.l.bgpd == nil {
		return 0
	}
	return r.l.bgpd.PID()
}

func (r *frrRouter) log() string { return r.l.frrLog() }

func (r *frrRouter) sessionStates() (map[netip.Addr]string, error) { return r.l.frrSessionStates() }

func (r *frrRouter) paths(prefix netip.Prefix) ([]Path, error) {
	out, err := r.l.frrPrefixJSON(prefix)
	if err != nil {
		return nil, err
	}
	return parseFRRPaths(out)
}

// routeProto: zebra installs BGP routes as proto 186, "bgp".
func (r *frrRouter) routeProto() string { return "bgp" }

// frrSessionStates reads the sessions' states from bgpd.
func (l *Lab) frrSessionStates() (map[netip.Addr]string, error) {
	out, err := l.Vtysh("show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	return parseFRRNeighbors([]byte(out))
}
