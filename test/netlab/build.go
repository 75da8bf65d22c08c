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

// configureLink gives dev in ns ("" = host) the addresses and brings it up,
// without IPv6 link-local addresses (every address stays in the lab ranges;
// an FRR router is the one exception, see frrRouter.prepareLinks).
func configureLink(ns, dev string, addrs ...netip.Addr) error {
	cmds := [][]string{{"link", "set", "dev", dev, "addrgenmode", "none"}}
	for _, a := range addrs {
		cmds = append(cmds, addrArgs(a, dev))
	}
	cmds = append(cmds, []string{"link", "set", "dev", dev, "up"})
	for _, c := range cmds {
		if err := ipn(ns, c...); err != nil {
			return err
		}
	}
	return nil
}

// bridgePort enslaves the router end dev of a veth to the bridge.
func (l *Lab) bridgePort(dev string) error {
	if err := ipn(l.Router, "link", "set", "dev", dev, "addrgenmode", "none"); err != nil {
		return err
	}
	return ipn(l.Router, "link", "set", "dev", dev, "master", bridgeName, "up")
}

func (l *Lab) buildRouter() error {
	if err := ipn(l.Router, "link", "add", bridgeName, "type", "bridge", "mcast_snooping", "0"); err != nil {
		return err
	}
	// A bridge takes the lowest MAC of its ports unless its own is set, and
	// a change flushes its neighbour entries, the permanent ones too: pin it.
	mac, err := linkMAC(l.Router, bridgeName)
	if err != nil {
		return err
	}
	if err := ipn(l.Router, "link", "set", "dev", bridgeName, "address", mac); err != nil {
		return err
	}
	addrs := []netip.Addr{RouterAddr(IPv4), RouterAddr(IPv6)}
	if l.Opts.SecondRouter {
		addrs = append(addrs, SecondRouterAddr(IPv4), SecondRouterAddr(IPv6))
	}
	if err := configureLink(l.Router, bridgeName, addrs...); err != nil {
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
	ns, port := l.Nodes[i], fmt.Sprintf("n%d", i)
	if err := ipn(ns, "link", "add", nsLink, "type", "veth", "peer", "name", port, "netns", l.Router); err != nil {
		return err
	}
	if err := l.bridgePort(port); err != nil {
		return err
	}
	if err := configureLink(ns, nsLink, NodeAddr(IPv4, i), NodeAddr(IPv6, i)); err != nil {
		return err
	}
	if err := l.staticNeighbors(ns, NodeAddr(IPv6, i), bridgeName, RouterAddr(IPv6)); err != nil {
		return err
	}
	if err := ipn(ns, defaultRouteArgs(RouterAddr(IPv4))...); err != nil {
		return err
	}
	return ipn(ns, defaultRouteArgs(RouterAddr(IPv6))...)
}

func (l *Lab) buildClient() error {
	if err := ipn(l.Client, "link", "add", nsLink, "type", "veth", "peer", "name", routerClient, "netns", l.Router); err != nil {
		return err
	}
	if err := configureLink(l.Router, routerClient, ClientGateway(IPv4), ClientGateway(IPv6)); err != nil {
		return err
	}
	if err := configureLink(l.Client, nsLink, ClientAddr(IPv4), ClientAddr(IPv6)); err != nil {
		return err
	}
	if err := l.staticNeighbors(l.Client, ClientAddr(IPv6), routerClient, ClientGateway(IPv6)); err != nil {
		return err
	}
	if err := ipn(l.Client, defaultRouteArgs(ClientGateway(IPv4))...); err != nil {
		return err
	}
	return ipn(l.Client, defaultRouteArgs(ClientGateway(IPv6))...)
}

// staticNeighbors gives the router and namespace ns permanent IPv6
// neighbour entries for each other: a (ns's address on its lab link) on the
// router's dev, and the router's address gw on ns's link. Without link-local
// addresses the kernel cannot solicit a neighbour for a packet whose source
// is not on the outgoing link (a forwarded packet, or a reply from a VIP on
// lo), so the lab states them.
func (l *Lab) staticNeighbors(ns string, a netip.Addr, dev string, gw netip.Addr) error {
	mac, err := linkMAC(ns, nsLink)
	if err != nil {
		return err
	}
	if err := ipn(l.Router, "-6", "neigh", "replace", a.String(), "lladdr", mac, "dev", dev, "nud", "permanent"); err != nil {
		return err
	}
	if mac, err = linkMAC(l.Router, dev); err != nil {
		return err
	}
	return ipn(ns, "-6", "neigh", "replace", gw.String(), "lladdr", mac, "dev", nsLink, "nud", "permanent")
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
	if err := l.bridgePort(routerSpeakers); err != nil {
		return err
	}
	return configureLink("", l.HostLink, append(l.SpeakerAddrs(IPv4), l.SpeakerAddrs(IPv6)...)...)
}
