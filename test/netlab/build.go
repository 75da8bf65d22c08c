package netlab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// Interface names inside the namespaces. Only the host end of the speaker
// veth (Lab.HostLink) lives in the host namespace.
const (
	bridgeName     = "br0"
	nsLink         = "eth0"   // node's and client's link to the router
	routerClient   = "client" // router end of the client link
	routerSpeakers = "spk"    // router end of the host veth
)

// run runs a command and returns its output in the error.
func run(name string, args ...string) error {
	_, err := output(name, args...)
	return err
}

// output runs a command and returns its standard output.
func output(name string, args ...string) (string, error) {
	return command(context.Background(), "", name, args...)
}

// command runs a command, killed when ctx ends, with stdin as its standard
// input, and returns its standard output.
func command(ctx context.Context, stdin, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // ip, bird, birdc, nft and curl with the lab's own arguments
	var stdout, stderr bytes.Buffer
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// execIn runs a command in namespace ns (ip netns exec), killed when ctx
// ends, and returns its standard output.
func execIn(ctx context.Context, ns string, args ...string) (string, error) {
	return command(ctx, "", "ip", append([]string{"netns", "exec", ns}, args...)...)
}

// Exec runs a command in namespace ns and returns its standard output.
func (l *Lab) Exec(ns string, args ...string) (string, error) {
	return execIn(context.Background(), ns, args...)
}

// ipn runs `ip -n ns args...`, or `ip args...` in the host namespace when ns
// is "".
func ipn(ns string, args ...string) error {
	if ns == "" {
		return run("ip", args...)
	}
	return run("ip", append([]string{"-n", ns}, args...)...)
}

// build makes the topology and starts the router; on error Close undoes what
// exists.
func (l *Lab) build() error {
	dir, err := os.MkdirTemp("", "netlab-"+l.ID+"-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	l.Dir = dir
	l.routerNS = newRouterNS(l.Router, dir, l.Opts.Router, l.routerConfig())
	for _, ns := range append([]string{l.Router, l.Client}, l.Nodes...) {
		if err := l.addNamespace(ns); err != nil {
			return err
		}
	}
	steps := []func() error{l.buildRouter, l.buildClient, l.buildHost,
		func() error { return l.rt.prepareLinks(bridgeName) }}
	for i := range l.Nodes {
		steps = append(steps, func() error { return l.buildNode(i) })
	}
	if l.Opts.UnnumberedSpeaker {
		steps = append(steps, l.buildUnnumberedSpeaker)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return l.rt.start()
}

func (l *Lab) addNamespace(ns string) error { return addNamespace(&l.mu, &l.namespaces, ns) }

// addNamespace creates namespace ns, records it in *created (under mu) so
// that the lab's Close deletes it by name, and brings its loopback up.
func addNamespace(mu *sync.Mutex, created *[]string, ns string) error {
	if err := run("ip", "netns", "add", ns); err != nil {
		return err
	}
	mu.Lock()
	*created = append(*created, ns)
	mu.Unlock()
	return ipn(ns, "link", "set", "lo", "up")
}

// deleteNamespaces deletes the namespaces created, by name, last first.
func deleteNamespaces(created []string) []error {
	var errs []error
	for i := len(created) - 1; i >= 0; i-- {
		if err := run("ip", "netns", "del", created[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// addrArgs are the `ip addr add` arguments of a in a /24 or /64 on dev.
func addrArgs(a netip.Addr, dev string) []string {
	if a.Is4() {
		return []string{"addr", "add", a.String() + "/24", "dev", dev}
	}
	return []string{"-6", "addr", "add", a.String() + "/64", "dev", dev, "nodad"}
}

// defaultRouteArgs are the `ip route add` arguments of a default route via gw.
func defaultRouteArgs(gw netip.Addr) []string {
	if gw.Is4() {
		return []string{"route", "add", "default", "via", gw.String()}
	}
	return []string{"-6", "route", "add", "default", "via", gw.String()}
}

// configureLink gives dev in ns ("" = host) the addresses, each in a /24
// or a /64, and brings it up (configurePrefixes).
func configureLink(ns, dev string, addrs ...netip.Addr) error {
	prefixes := make([]netip.Prefix, len(addrs))
	for i, a := range addrs {
		prefixes[i] = netip.PrefixFrom(a, 24)
		if a.Is6() {
			prefixes[i] = netip.PrefixFrom(a, 64)
		}
	}
	return configurePrefixes(ns, dev, prefixes...)
}

// configurePrefixes gives dev in ns ("" = host) the prefixes' addresses and
// brings it up, without IPv6 link-local addresses (every address stays in
// the lab ranges; an FRR router is the one exception, see
// frrRouter.prepareLinks).
func configurePrefixes(ns, dev string, prefixes ...netip.Prefix) error {
	cmds := [][]string{{"link", "set", "dev", dev, "addrgenmode", "none"}}
	for _, p := range prefixes {
		if p.Addr().Is4() {
			cmds = append(cmds, []string{"addr", "add", p.String(), "dev", dev})
		} else {
			cmds = append(cmds, []string{"-6", "addr", "add", p.String(), "dev", dev, "nodad"})
		}
	}
	cmds = append(cmds, []string{"link", "set", "dev", dev, "up"})
	for _, c := range cmds {
		if err := ipn(ns, c...); err != nil {
			return err
		}
	}
	return nil
}

// segment is the node segment: the bridge in the router namespace.
func (l *Lab) segment() segment { return segment{ns: l.Router} }

func (l *Lab) buildRouter() error {
	seg, err := newSegment(l.Router)
	if err != nil {
		return err
	}
	addrs := []netip.Addr{RouterAddr(IPv4), RouterAddr(IPv6)}
	if l.Opts.SecondRouter {
		addrs = append(addrs, SecondRouterAddr(IPv4), SecondRouterAddr(IPv6))
	}
	if err := seg.gateway(addrs...); err != nil {
		return err
	}
	_, err = l.Exec(l.Router, "sysctl", "-q", "-w",
		"net.ipv4.ip_forward=1",
		"net.ipv6.conf.all.forwarding=1",
		// Hash on ports too, so connections from the one client spread
		// over the next hops of an ECMP route.
		"net.ipv4.fib_multipath_hash_policy=1",
		"net.ipv6.fib_multipath_hash_policy=1")
	return err
}

func (l *Lab) buildNode(i int) error {
	if err := l.segment().attachNode(l.Nodes[i], fmt.Sprintf("n%d", i),
		NodeAddr(IPv4, i), NodeAddr(IPv6, i), RouterAddr(IPv4), RouterAddr(IPv6)); err != nil {
		return err
	}
	if !l.Opts.IPv6Only {
		return nil
	}
	// An IPv6-only node: its IPv4 address goes, and its IPv4 default
	// route with it; the loopback keeps 127.0.0.1.
	return ipn(l.Nodes[i], "-4", "addr", "flush", "scope", "global")
}

func (l *Lab) buildClient() error {
	if err := veth(l.Client, nsLink, l.Router, routerClient); err != nil {
		return err
	}
	if err := configureLink(l.Router, routerClient, ClientGateway(IPv4), ClientGateway(IPv6)); err != nil {
		return err
	}
	return routeVia(l.Client, ClientAddr(IPv4), ClientAddr(IPv6), l.Router, routerClient, ClientGateway(IPv4), ClientGateway(IPv6))
}

// linkMAC is the MAC address of dev in ns.
func linkMAC(ns, dev string) (string, error) {
	out, err := output("ip", "-n", ns, "-j", "link", "show", "dev", dev)
	if err != nil {
		return "", err
	}
	var links []struct {
		Address string `json:"address"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return "", fmt.Errorf("MAC address of %s in %s: %q: %w", dev, ns, out, err)
	}
	if len(links) != 1 || links[0].Address == "" {
		return "", fmt.Errorf("MAC address of %s in %s: %q: not one link with an address", dev, ns, out)
	}
	return links[0].Address, nil
}

// buildHost attaches the host namespace to the node segment: a veth whose
// host end holds the speaker addresses (and so only the segment's connected
// routes) and whose other end is a port of the router's bridge.
func (l *Lab) buildHost() error {
	if err := run("ip", "link", "add", l.HostLink, "type", "veth", "peer", "name", routerSpeakers, "netns", l.Router); err != nil {
		return err
	}
	l.mu.Lock()
	l.links = append(l.links, l.HostLink)
	l.mu.Unlock()
	if err := l.segment().port(routerSpeakers); err != nil {
		return err
	}
	return configureLink("", l.HostLink, append(l.SpeakerAddrs(IPv4), l.SpeakerAddrs(IPv6)...)...)
}
