package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// The anycast address the node speakers announce in the leaf-spine tests:
// the shape of a LoadBalancer address announced by every eligible node.
var (
	lsVIP4 = netip.MustParseAddr("198.18.26.1")
	lsVIP6 = netip.MustParseAddr("2001:db8:26::1")
)

func TestLeafSpineAddressPlan(t *testing.T) {
	var all []netip.Addr
	for _, f := range []Family{IPv4, IPv6} {
		all = append(all, LeafSpineClientAddr(f), LeafSpineClientGateway(f), lsVIP4, lsVIP6)
		for r := range 2 {
			all = append(all, LeafSpineTorAddr(f, r), LeafSpineTorUplinkAddr(f, r), LeafSpineSpineAddr(f, r),
				LeafSpineNodeAddr(f, r, 0), LeafSpineNodeAddr(f, r, maxNodesPerRack-1))
			if !LeafSpineNodeSubnet(f, r).Contains(LeafSpineNodeAddr(f, r, maxNodesPerRack-1)) {
				t.Errorf("rack %d subnet %s lacks its last node", r, LeafSpineNodeSubnet(f, r))
			}
			up := netip.PrefixFrom(LeafSpineSpineAddr(f, r), lsUplinkBits(f)).Masked()
			if !up.Contains(LeafSpineTorUplinkAddr(f, r)) || up.Addr() == LeafSpineSpineAddr(f, r) {
				t.Errorf("ToR %d link %s: spine %s, ToR %s", r, up, LeafSpineSpineAddr(f, r), LeafSpineTorUplinkAddr(f, r))
			}
		}
	}
	// Blocks of the one-segment lab, its pools and the bench, which the
	// leaf-spine lab must not reuse.
	taken := []netip.Prefix{
		netip.MustParsePrefix("198.18.10.0/24"), netip.MustParsePrefix("198.18.20.0/24"),
		netip.MustParsePrefix("198.18.32.0/19"), netip.MustParsePrefix("198.18.96.0/22"),
		netip.MustParsePrefix("198.18.100.0/22"), netip.MustParsePrefix("198.18.200.0/24"),
		netip.MustParsePrefix("198.19.0.0/16"), netip.MustParsePrefix("2001:db8:10::/64"),
		netip.MustParsePrefix("2001:db8:20::/64"), netip.MustParsePrefix("2001:db8:19::/56"),
	}
	for _, a := range all {
		if err := checkAddr(a); err != nil {
			t.Error(err)
		}
		for _, p := range taken {
			if p.Contains(a) {
				t.Errorf("%s is in %s, which other labs use", a, p)
			}
		}
	}
	if got := LeafSpineNodeAddr(IPv6, 1, 0).String(); got != "2001:db8:31::11" {
		t.Errorf("rack 1 node 0 = %s", got)
	}
	if got := LeafSpineTorUplinkAddr(IPv4, 1).String(); got != "198.18.24.6" {
		t.Errorf("ToR 1 uplink = %s", got)
	}
}

// TestLeafSpineConfigs checks the routers' configs without running them:
// BIRD's parser (bird -p) and FRR's two dry runs (frrDryRun), with and
// without a password.
func TestLeafSpineConfigs(t *testing.T) {
	for _, pw := range []string{"", "s3cret"} {
		birdTors, spine, err := LeafSpineConfigs(LeafSpineOptions{Password: pw})
		if err != nil {
			t.Fatal(err)
		}
		for r, c := range birdTors {
			if got := strings.Contains(c, "add paths rx"); got != (r == 0) {
				t.Errorf("ToR %d: add paths rx = %v", r, got)
			}
		}
		if _, err := exec.LookPath(birdPath); err == nil {
			for i, conf := range append(birdTors[:], spine) {
				path := filepath.Join(t.TempDir(), "bird.conf")
				if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
					t.Fatal(err)
				}
				if out, err := exec.Command(birdPath, "-p", "-c", path).CombinedOutput(); err != nil { //nolint:gosec // BIRD on a file of this test
					t.Errorf("bird -p config %d: %v: %s\n%s", i, err, out, conf)
				}
			}
		} else {
			t.Logf("bird -p skipped: %v", err)
		}
		frrTors, _, err := LeafSpineConfigs(LeafSpineOptions{Password: pw, TorRouter: [2]RouterKind{RouterBIRD, RouterFRR}})
		if err != nil {
			t.Fatal(err)
		}
		conf := frrTors[1]
		for _, want := range []string{"router bgp 65002", "bgp listen range 198.18.31.0/24 peer-group NODES",
			"bgp listen range 2001:db8:31::/64 peer-group NODES6", "maximum-paths 64", "neighbor 198.18.24.5 remote-as 65000"} {
			if !strings.Contains(conf, want) {
				t.Errorf("FRR ToR config lacks %q:\n%s", want, conf)
			}
		}
		if got := strings.Contains(conf, "password"); got != (pw != "") {
			t.Errorf("FRR ToR config with password %q has a password line: %v", pw, got)
		}
		frrDryRun(t, conf)
	}
}

// TestLeafSpineBIRD runs the leaf-spine lab with two BIRD ToRs, ToR 1
// without ADD-PATH: a BIRD speaker in node 0 of rack 0 and in both nodes of
// rack 1 announces the same /32 and /128 (as node agents announce a
// LoadBalancer address), next hop itself, each to its own ToR only.
func TestLeafSpineBIRD(t *testing.T) {
	ls := NewLeafSpine(t, LeafSpineOptions{})
	if got := ls.NoAddPathTor(); got != 1 {
		t.Fatalf("NoAddPathTor = %d, want 1", got)
	}
	testLeafSpineAnycast(t, ls)
}

// TestLeafSpineFRRTor is TestLeafSpineBIRD with FRR as ToR 1, running the
// config of lsFRRTorTemplate (the docs' FRR ToR example), and with TCP MD5
// passwords on the node sessions (FRR's listen range takes them too).
func TestLeafSpineFRRTor(t *testing.T) {
	ls := NewLeafSpine(t, LeafSpineOptions{TorRouter: [2]RouterKind{RouterBIRD, RouterFRR}, Password: "s3cret"})
	if got := ls.NoAddPathTor(); got != -1 {
		t.Errorf("NoAddPathTor = %d with an FRR ToR 1, want -1", got)
	}
	testLeafSpineAnycast(t, ls)
}

// TestLeafSpineClose checks that Close leaves nothing behind: no
// namespace, router process or folder of the lab (FRR's /var/tmp/frr is
// checked by TestFRRLab).
func TestLeafSpineClose(t *testing.T) {
	ls := NewLeafSpine(t, LeafSpineOptions{NodesPerRack: 1, TorRouter: [2]RouterKind{RouterFRR, RouterBIRD}})
	var pids []int
	var dirs []string
	for _, ns := range ls.routerOrder() {
		rt, err := ls.router(ns)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, rt.RouterPID())
		if rt.zebra != nil {
			pids = append(pids, rt.zebra.PID())
		}
		dirs = append(dirs, rt.dir)
	}
	if len(pids) != 4 || slices.Contains(pids, 0) {
		t.Fatalf("router PIDs %v, want spine and ToR 1 BIRD, ToR 0 bgpd and zebra", pids)
	}
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := output("ip", "netns", "list")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, ls.ID) {
		t.Errorf("namespaces left after Close:\n%s", out)
	}
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			t.Errorf("router process %d still runs after Close", pid)
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("folder %s left after Close", d)
		}
	}
	if !strings.Contains(ls.RouterLogs(), "bgpd") {
		t.Errorf("router logs after Close lack bgpd's:\n%s", ls.RouterLogs())
	}
}

// testLeafSpineAnycast is the scenario of TestLeafSpineBIRD on lab ls.
func testLeafSpineAnycast(t *testing.T, ls *LeafSpine) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type node struct{ r, i int }
	speakers := []node{{0, 0}, {1, 0}, {1, 1}}
	for _, n := range speakers {
		startNodeBird(t, ls, n.r, n.i, lsVIP4, lsVIP6)
		if err := ls.ServeVIP(n.r, n.i, lsVIP4, lsVIP6); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []Family{IPv4, IPv6} {
		vip := HostPrefix(lsVIP4)
		if f == IPv6 {
			vip = HostPrefix(lsVIP6)
		}
		for r := range 2 {
			var want []netip.Addr
			for _, n := range speakers {
				if n.r == r {
					want = append(want, LeafSpineNodeAddr(f, r, n.i))
				}
			}
			if err := ls.WaitEstablished(ctx, ls.Tors[r], want...); err != nil {
				t.Fatal(err)
			}
			if ls.Opts.TorRouter[r] == RouterBIRD {
				// ADD-PATH receive is offered by the ToR configured with it
				// only (AddPathTor).
				out, err := ls.Birdc(ls.Tors[r], "show", "protocols", "all", lsNodeProtocol(f, speakers[0].i))
				if err != nil {
					t.Fatal(err)
				}
				if got := birdOffersAddPathRx(out); got != ls.Opts.addPath(r) {
					t.Errorf("ToR %d offers ADD-PATH receive: %v, want %v:\n%s", r, got, ls.Opts.addPath(r), out)
				}
			}
			// Each ToR routes the address to its own announcing nodes,
			// ECMP when there are several.
			if err := ls.WaitRoute(ctx, ls.Tors[r], vip, want); err != nil {
				t.Fatal(err)
			}
			// One BGP path per node, each from the node's own session: also
			// at a ToR without ADD-PATH.
			paths, err := ls.BGPPaths(ls.Tors[r], vip)
			if err != nil {
				t.Fatal(err)
			}
			var fromNodes []netip.Addr
			for _, p := range paths {
				if p.Peer == p.NextHop && slices.Contains(want, p.Peer) {
					fromNodes = append(fromNodes, p.Peer)
				}
			}
			slices.SortFunc(fromNodes, netip.Addr.Compare)
			if !slices.Equal(fromNodes, want) {
				t.Errorf("ToR %d: paths of %s from its nodes %v (all: %v), want one each from %v", r, vip, fromNodes, paths, want)
			}
		}
		// The spine: one ECMP route across both racks.
		if err := ls.WaitRoute(ctx, ls.Spine, vip, []netip.Addr{LeafSpineTorUplinkAddr(f, 0), LeafSpineTorUplinkAddr(f, 1)}); err != nil {
			t.Fatal(err)
		}
		// The racks' subnets reach the spine too.
		for r := range 2 {
			if err := ls.WaitRoute(ctx, ls.Spine, LeafSpineNodeSubnet(f, r), []netip.Addr{LeafSpineTorUplinkAddr(f, r)}); err != nil {
				t.Fatal(err)
			}
		}
		// HTTP from the client reaches nodes in both racks: the spine
		// hashes on ports, so new connections spread over the ToRs.
		seen := map[string]int{}
		for range 64 {
			body, err := ls.ClientGet(ctx, VIPURL(vip.Addr()))
			if err != nil {
				t.Fatalf("%s: %v", f.name(), err)
			}
			seen[body]++
			if len(seen) == len(speakers) {
				break
			}
		}
		racks := map[string]bool{}
		for name := range seen {
			racks[name[:2]] = true
		}
		if !racks["r0"] || !racks["r1"] {
			t.Errorf("IPv%d: answers from %v, want nodes of both racks", f, seen)
		}
		t.Logf("IPv%d: answers %v", f, seen)
	}
}

// birdOffersAddPathRx reads `birdc show protocols all NAME` of an
// established session: whether BIRD's own capabilities include ADD-PATH
// with a receiving family.
func birdOffersAddPathRx(out string) bool {
	ps := ParseBirdProtocols(out)
	return len(ps) == 1 && ps[0].LocalAddPathRx
}

func (f Family) name() string { return fmt.Sprintf("IPv%d", int(f)) }

// startNodeBird runs BIRD in node i of rack r as a stand-in for the node
// agent: one session per family with its own ToR, announcing vips with
// itself as next hop (eBGP's default), nothing imported. Stopped by PID at
// the test's end.
func startNodeBird(t *testing.T, ls *LeafSpine, r, i int, vips ...netip.Addr) {
	t.Helper()
	dir, err := os.MkdirTemp("", "netlab-"+ls.ID+"-speaker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	var b strings.Builder
	fmt.Fprintf(&b, "log stderr all;\nrouter id %s;\nprotocol device {}\n", LeafSpineNodeAddr(IPv4, r, i))
	for _, v := range vips {
		fmt.Fprintf(&b, "protocol static {\n\t%s;\n\troute %s blackhole;\n}\n", channel(FamilyOf(v)), HostPrefix(v))
	}
	for _, f := range []Family{IPv4, IPv6} {
		fmt.Fprintf(&b, "protocol bgp tor_%d {\n\tlocal %s as %d;\n\tneighbor %s as %d;\n%s",
			f, LeafSpineNodeAddr(f, r, i), ls.Opts.NodeASN, LeafSpineTorAddr(f, r), ls.Opts.TorASN[r], lsBGPTimers)
		if ls.Opts.Password != "" {
			fmt.Fprintf(&b, "\tpassword %q;\n", ls.Opts.Password)
		}
		fmt.Fprintf(&b, "\t%s {\n\t\timport none;\n\t\texport all;\n\t};\n}\n", channel(f))
	}
	conf := filepath.Join(dir, "bird.conf")
	if err := os.WriteFile(conf, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := framework.StartProcess("bird-node", filepath.Join(dir, "bird.log"), false,
		"ip", "netns", "exec", ls.NodeNamespace(r, i), birdPath, "-f", "-c", conf, "-s", filepath.Join(dir, "bird.ctl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("speaker BIRD of rack %d node %d:\n%s", r, i, p.Log())
		}
		p.Stop(routerStopGrace)
	})
}
