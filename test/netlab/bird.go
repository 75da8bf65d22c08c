package netlab

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

var (
	birdPath  = sbin("bird")
	birdcPath = sbin("birdc")
)

// sbin finds a binary on PATH, or in /usr/sbin, which a user's PATH may lack.
func sbin(name string) string { return lookPath(name, "/usr/sbin") }

// BirdSocket is the path of BIRD's control socket (for birdc -s).
func (n *routerNS) BirdSocket() string { return filepath.Join(n.dir, "bird.ctl") }

func (n *routerNS) birdConfPath() string { return filepath.Join(n.dir, "bird.conf") }

func (n *routerNS) birdLogPath() string { return filepath.Join(n.dir, "bird.log") }

// ProtocolName is the BIRD protocol of speaker i's session of family f.
func ProtocolName(f Family, i int) string { return fmt.Sprintf("spk%d_%d", f, i) }

// nodeProtocolName is the BIRD protocol of the session of family f with node
// i's own address (Options.NodePeers).
func nodeProtocolName(f Family, i int) string { return fmt.Sprintf("node%d_%d", f, i) }

// birdConfig is the router's configuration: one eBGP session per speaker
// address (and node address of NodePeers) and family that accepts several
// paths per prefix (ADD-PATH receive) and exports nothing, and kernel
// protocols that merge equal paths into ECMP routes.
func (l *Lab) birdConfig() string {
	var b strings.Builder
	fmt.Fprintf(&b, "log stderr all;\n# set by hand: a router without an IPv4 address has none to take it from\nrouter id %s;\n\n", RouterAddr(IPv4))
	b.WriteString("protocol device {\n\tscan time 10;\n}\n\n")
	for _, f := range l.Opts.families() {
		fmt.Fprintf(&b, "protocol kernel kernel%d {\n\tmerge paths on;\n\t%s {\n\t\timport none;\n\t\texport all;\n\t};\n}\n\n",
			f, channel(f))
	}
	b.WriteString(l.Opts.BirdExtra)
	if l.Opts.BFD {
		b.WriteString(labBirdBFD)
	}
	for _, f := range l.Opts.families() {
		for _, p := range l.Opts.peers(f) {
			if tpl := l.Opts.BirdTemplates[f]; tpl != "" {
				fmt.Fprintf(&b, "protocol bgp %s from %s {\n\tlocal %s as %d;\n\tneighbor %s as %d;\n}\n\n",
					p.name, tpl, RouterAddr(f), l.Opts.RouterASN, p.addr, l.Opts.SpeakerASN)
				continue
			}
			fmt.Fprintf(&b, "protocol bgp %s {\n", p.name)
			fmt.Fprintf(&b, "\tlocal %s as %d;\n", RouterAddr(f), l.Opts.RouterASN)
			fmt.Fprintf(&b, "\tneighbor %s as %d;\n", p.addr, l.Opts.SpeakerASN)
			b.WriteString("\tpassive on; # the speakers dial; they do not listen\n")
			if p.routerID.IsValid() {
				fmt.Fprintf(&b, "\t# its router ID: %s, folded from its address\n", p.routerID)
			}
			if l.Opts.BFD {
				b.WriteString("\tbfd on;\n")
			}
			if pw := p.password; pw != "" {
				fmt.Fprintf(&b, "\tpassword %q;\n", pw)
			}
			fmt.Fprintf(&b, "\t%s {\n\t\timport all;\n\t\texport none;\n\t\tadd paths rx;\n\t};\n}\n\n", channel(f))
		}
	}
	if l.Opts.UnnumberedSpeaker {
		b.WriteString(l.Opts.birdUnnumberedSpeaker())
	}
	if l.Opts.SecondRouter {
		l.secondRouterConfig(&b)
	}
	return b.String()
}

// labBirdBFD is the router's bfd protocol with Options.BFD: the speakers'
// profile (LeafSpineBFD), on every interface.
const labBirdBFD = `protocol bfd {
	interface "*" {
		min rx interval 300 ms;
		min tx interval 300 ms;
		idle tx interval 300 ms;
		multiplier 3;
	};
}

`

// SecondProtocolName is the BIRD protocol of speaker i's session of family
// f with the second router address (Options.SecondRouter).
func SecondProtocolName(f Family, i int) string { return fmt.Sprintf("spk%d_%d_b", f, i) }

// SecondRouterPort is the BGP port of the second router address: BIRD runs
// one session per neighbor address and port at a time (its lock has no
// local address), so the second address's sessions with the same speaker
// addresses listen on a port of their own.
const SecondRouterPort = 1790

// secondRouterConfig adds the sessions of the second router address: like
// the first's, in SecondRouterASN, on SecondRouterPort. The sessions are
// direct (the speakers are on the segment) with direct gateways, so that
// BIRD takes the next hops as they come on iBGP too.
func (l *Lab) secondRouterConfig(b *strings.Builder) {
	for _, f := range []Family{IPv4, IPv6} {
		for i := range l.Opts.Speakers {
			fmt.Fprintf(b, "protocol bgp %s {\n", SecondProtocolName(f, i))
			fmt.Fprintf(b, "\tlocal %s port %d as %d;\n", SecondRouterAddr(f), SecondRouterPort, l.Opts.SecondRouterASN)
			fmt.Fprintf(b, "\tneighbor %s port %d as %d;\n", SpeakerAddr(f, i), SecondRouterPort, l.Opts.SpeakerASN)
			b.WriteString("\tpassive on;\n\tdirect;\n")
			if pw := l.Opts.password(i); pw != "" {
				fmt.Fprintf(b, "\tpassword %q;\n", pw)
			}
			fmt.Fprintf(b, "\t%s {\n\t\timport all;\n\t\texport none;\n\t\tadd paths rx;\n\t\tgateway direct;\n\t};\n}\n\n", channel(f))
		}
	}
}

func channel(f Family) string {
	if f == IPv6 {
		return "ipv6"
	}
	return "ipv4"
}

// runBird writes conf as BIRD's config and runs BIRD in n's namespace
// until its control socket answers; its PID stays in n, whose closeRouter
// stops it.
func (n *routerNS) runBird(conf string) error {
	if err := os.WriteFile(n.birdConfPath(), []byte(conf), 0o600); err != nil {
		return fmt.Errorf("write bird config: %w", err)
	}
	p, err := framework.StartProcess("bird", n.birdLogPath(), false,
		"ip", "netns", "exec", n.ns, birdPath, "-f", "-c", n.birdConfPath(), "-s", n.BirdSocket())
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.bird = p
	n.mu.Unlock()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := n.Birdc("show", "status"); err == nil {
			return nil
		}
		if p.Exited() {
			return fmt.Errorf("bird exited; its log:\n%s", p.Log())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bird control socket %s did not answer; log:\n%s", n.BirdSocket(), p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopBird stops the BIRD process n started, by its PID; n.mu is held.
func (n *routerNS) stopBird() {
	if n.bird != nil {
		n.bird.Stop(routerStopGrace)
		n.bird = nil
	}
}

// Birdc runs a birdc command against the lab's BIRD and returns its output.
func (n *routerNS) Birdc(args ...string) (string, error) {
	return output(birdcPath, append([]string{"-s", n.BirdSocket()}, args...)...)
}

// birdRouter is BIRD 2 as a lab's router: one process, l.bird.
type birdRouter struct {
	n   *routerNS
	cfg routerConfig
}

func (r *birdRouter) config() (string, error) { return r.cfg.bird(), nil }

// prepareLinks: BIRD needs nothing beyond the lab's addresses.
func (r *birdRouter) prepareLinks(...string) error { return nil }

func (r *birdRouter) start() error { return r.n.runBird(r.cfg.bird()) }

func (r *birdRouter) stop() { r.n.stopBird() }

func (r *birdRouter) pid() int {
	if r.n.bird == nil {
		return 0
	}
	return r.n.bird.PID()
}

func (r *birdRouter) log() string { return readLog("bird", r.n.birdLogPath()) }

// sessionStates reads the BGP protocols' states from birdc.
func (r *birdRouter) sessionStates() (map[netip.Addr]string, error) {
	out, err := r.n.Birdc("show", "protocols")
	if err != nil {
		return nil, err
	}
	return birdSessionStates(out, r.cfg.peerAddr), nil
}

func (r *birdRouter) paths(prefix netip.Prefix) ([]Path, error) {
	out, err := r.n.Birdc("show", "route", prefix.String(), "all")
	if err != nil {
		if strings.Contains(out, "Network not found") {
			return nil, nil // birdc's answer (and exit code 1) for no route
		}
		return nil, fmt.Errorf("%w: %s", err, out)
	}
	return parseBirdPaths(out, r.cfg.peerAddr)
}

func (r *birdRouter) routeProto() string { return "bird" }
