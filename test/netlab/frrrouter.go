package netlab

import "net/netip"

// frrRouter is FRR as a lab's router: zebra and bgpd, l.zebra and l.bgpd.
type frrRouter struct {
	n   *routerNS
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
		if err := ipn(r.n.ns, "-6", "addr", "add", "fe80::1/64", "dev", dev, "nodad"); err != nil {
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
	bfdd := ""
	if r.cfg.bfdd != nil {
		bfdd = r.cfg.bfdd()
	}
	return r.n.runFRR(conf, bfdd, r.cfg.sessions)
}

func (r *frrRouter) stop() { r.n.stopFRR() }

func (r *frrRouter) pid() int {
	if r.n.bgpd == nil {
		return 0
	}
	return r.n.bgpd.PID()
}

func (r *frrRouter) log() string { return r.n.frrLog() }

func (r *frrRouter) sessionStates() (map[netip.Addr]string, error) { return r.n.frrSessionStates() }

func (r *frrRouter) paths(prefix netip.Prefix) ([]Path, error) {
	out, err := r.n.frrPrefixJSON(prefix)
	if err != nil {
		return nil, err
	}
	return parseFRRPaths(out)
}

// routeProto: zebra installs BGP routes as proto 186, "bgp".
func (r *frrRouter) routeProto() string { return "bgp" }

// frrSessionStates reads the sessions' states from bgpd.
func (n *routerNS) frrSessionStates() (map[netip.Addr]string, error) {
	out, err := n.Vtysh("show bgp neighbors json")
	if err != nil {
		return nil, err
	}
	return parseFRRNeighbors([]byte(out))
}
