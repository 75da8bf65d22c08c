package netlab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// Route returns the route of prefix that the BGP daemon of router namespace
// ns (the spine or a ToR) installed in its kernel, if any.
func (ls *LeafSpine) Route(ns string, prefix netip.Prefix) (Route, bool, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return Route{}, false, err
	}
	return rt.Route(prefix)
}

// WaitRoute polls until the kernel route of prefix in router namespace ns
// has exactly the wanted next hops (in any order); with none, until there
// is no route.
func (ls *LeafSpine) WaitRoute(ctx context.Context, ns string, prefix netip.Prefix, wantNextHops []netip.Addr) error {
	rt, err := ls.router(ns)
	if err != nil {
		return err
	}
	if err := rt.WaitRoute(ctx, prefix, wantNextHops); err != nil {
		return fmt.Errorf("%s: %w", ns, err)
	}
	return nil
}

// SessionStates maps each BGP neighbor address of router namespace ns to
// its session's state ("Established", "Active", ...; the same words for
// BIRD and FRR). An FRR ToR accepts its nodes by listen range: a node
// appears once it has connected.
func (ls *LeafSpine) SessionStates(ns string) (map[netip.Addr]string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return nil, err
	}
	return rt.SessionStates()
}

// WaitEstablished polls until router namespace ns has established sessions
// with all the given neighbor addresses.
func (ls *LeafSpine) WaitEstablished(ctx context.Context, ns string, addrs ...netip.Addr) error {
	err := waitEstablished(ctx, func() (map[netip.Addr]string, error) { return ls.SessionStates(ns) }, addrs)
	if err != nil {
		return fmt.Errorf("netlab leaf-spine: %s: sessions with %v: %w", ns, addrs, err)
	}
	return nil
}

// BGPPaths are the paths router namespace ns holds in its BGP table for
// exactly prefix, with the neighbor each came from (a ToR also holds the
// spine's path of a prefix its nodes announce, when the other rack announces
// it too).
func (ls *LeafSpine) BGPPaths(ns string, prefix netip.Prefix) ([]Path, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return nil, err
	}
	return rt.BGPPaths(prefix)
}

// Birdc runs a birdc command against the BIRD of router namespace ns.
func (ls *LeafSpine) Birdc(ns string, args ...string) (string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return "", err
	}
	return rt.Birdc(args...)
}

// Vtysh runs vtysh commands against the FRR of router namespace ns.
func (ls *LeafSpine) Vtysh(ns string, commands ...string) (string, error) {
	rt, err := ls.router(ns)
	if err != nil {
		return "", err
	}
	return rt.Vtysh(commands...)
}

// RouterPID is the PID of the BGP daemon (bird or bgpd) of router namespace
// ns, or 0.
func (ls *LeafSpine) RouterPID(ns string) int {
	rt, err := ls.router(ns)
	if err != nil {
		return 0
	}
	return rt.RouterPID()
}

// Exec runs a command in namespace ns and returns its standard output.
func (ls *LeafSpine) Exec(ns string, args ...string) (string, error) {
	return execIn(context.Background(), ns, args...)
}

// RunInNamespace runs fn in network namespace ns (framework.RunInNetNS).
func (ls *LeafSpine) RunInNamespace(ns string, fn func() error) error {
	return framework.RunInNetNS(ns, fn)
}

// ClientGet does an HTTP GET of rawURL from the client namespace, on a new
// connection, and returns the body (Lab.ClientGet).
func (ls *LeafSpine) ClientGet(ctx context.Context, rawURL string) (string, error) {
	return getIn(ctx, ls.Client, rawURL)
}

// SetNodeLink sets the ToR end of the link of node i of rack r down or up.
// Down, the node is as if powered off for the network (as Lab.SetNodeLink).
func (ls *LeafSpine) SetNodeLink(r, i int, up bool) error {
	if r < 0 || r >= len(ls.Racks) || i < 0 || i >= len(ls.Racks[r]) {
		return fmt.Errorf("netlab leaf-spine: no node %d in rack %d", i, r)
	}
	return setLink(ls.Tors[r], lsNodePort(i), up)
}

// ServeVIP puts the vips on the loopback of node i of rack r (as kube-proxy
// would take their traffic) and answers HTTP on port 80 of each with
// "r<r>n<i>", until the lab closes.
func (ls *LeafSpine) ServeVIP(r, i int, vips ...netip.Addr) error {
	ns, name := ls.NodeNamespace(r, i), fmt.Sprintf("r%dn%d", r, i)
	for _, v := range vips {
		if err := checkAddr(v); err != nil {
			return fmt.Errorf("netlab leaf-spine serve VIP: %w", err)
		}
		args := []string{"addr", "add", HostPrefix(v).String(), "dev", "lo"}
		if v.Is6() {
			args = append([]string{"-6"}, append(args, "nodad")...)
		}
		if err := ipn(ns, args...); err != nil {
			return err
		}
		ln, err := framework.ListenInNetNS(ns, "tcp", netip.AddrPortFrom(v, 80).String())
		if err != nil {
			return fmt.Errorf("netlab leaf-spine serve VIP: %w", err)
		}
		srv := &http.Server{
			Handler:           http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, name) }),
			ReadHeaderTimeout: 5 * time.Second,
		}
		go func() { _ = srv.Serve(ln) }()
		if err := ls.AddCloser(func() { _ = srv.Close() }); err != nil {
			return err
		}
	}
	return nil
}
