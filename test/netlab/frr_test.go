package netlab

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metal-ccm/metal-ccm/pkg/bgp"
)

func TestParseFRRNeighbors(t *testing.T) {
	data := `{"198.18.10.2":{"remoteAs":64512,"bgpState":"Established","peerGroup":"CCM","remoteRouterId":"198.18.10.2"},
	"2001:db8:10::2":{"remoteAs":64512,"bgpState":"Active"},
	"br0":{"bgpNeighborAddr":"fe80::2","bgpState":"Established","remoteRouterId":"198.18.10.9"},
	"n1":{"bgpNeighborAddr":"none","bgpState":"Idle"},
	"vrfName":{"x":1}}`
	got, err := parseFRRNeighbors([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	want := map[netip.Addr]string{
		netip.MustParseAddr("198.18.10.2"):    "Established",
		netip.MustParseAddr("2001:db8:10::2"): "Active",
		netip.MustParseAddr("fe80::2"):        "Established",
	}
	if len(got) != len(want) {
		t.Fatalf("states = %v, want %v", got, want)
	}
	for a, s := range want {
		if got[a] != s {
			t.Errorf("state of %s = %q, want %q", a, got[a], s)
		}
	}
	fields, err := parseFRRNeighborFields([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if id := fields[netip.MustParseAddr("198.18.10.2")].RemoteRouterID; id != "198.18.10.2" {
		t.Errorf("router ID of 198.18.10.2 = %q", id)
	}
	if _, err := parseFRRNeighbors([]byte("% Unknown command")); err == nil {
		t.Error("not JSON: no error")
	}
}

// TestFRRConfig checks the lab's FRR config: the sessions BIRD's config has,
// and that FRR 8.4 loads it without a complaint.
func TestFRRConfig(t *testing.T) {
	l := &Lab{Opts: Options{Speakers: 2, RouterASN: 64500, SpeakerASN: 64512, Password: "s3cret",
		Passwords: map[int]string{1: ""}, Router: RouterFRR}}
	cfg, err := l.frrConfig()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"router bgp 64500\n", "no bgp ebgp-requires-policy\n", "neighbor CCM remote-as 64512\n",
		"neighbor CCM passive\n", "neighbor CCM6 passive\n",
		"neighbor 198.18.10.3 peer-group CCM\n", "neighbor 2001:db8:10::3 peer-group CCM6\n",
		"neighbor 198.18.10.2 password s3cret\n", "neighbor 2001:db8:10::2 password s3cret\n",
		"maximum-paths 64\n", "neighbor CCM6 route-map NONE out\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("FRR config lacks %q:\n%s", want, cfg)
		}
	}
	if strings.Contains(cfg, "198.18.10.3 password") {
		t.Errorf("speaker 1 has a password:\n%s", cfg)
	}
	l.Opts.Password = "two words"
	if _, err := l.frrConfig(); err == nil {
		t.Error("password with a space: no error")
	}
	frrDryRun(t, cfg)
}

// TestFRRDocsExample checks that the FRR example of docs/routes.md loads
// into FRR 8.4 without a complaint.
func TestFRRDocsExample(t *testing.T) {
	conf, err := docsBlock(filepath.Join("..", "..", "docs", "routes.md"), "### FRR")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(conf, "router bgp ") {
		t.Fatalf("the block after ### FRR is no FRR config:\n%s", conf)
	}
	frrDryRun(t, conf)
}

// docsBlock is the first fenced block after the line heading in a Markdown
// file.
func docsBlock(path, heading string) (string, error) {
	f, err := os.Open(path) //nolint:gosec // a file of this repository
	if err != nil {
		return "", fmt.Errorf("docs block: %w", err)
	}
	defer func() { _ = f.Close() }()
	var b strings.Builder
	seen, in := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !seen:
			seen = line == heading
		case strings.HasPrefix(line, "```") && in:
			return b.String(), nil
		case strings.HasPrefix(line, "```"):
			in = true
		case in:
			b.WriteString(line + "\n")
		case strings.HasPrefix(line, "#"):
			return "", fmt.Errorf("docs block: no fenced block under %q in %s", heading, path)
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("docs block: %w", err)
	}
	return "", fmt.Errorf("docs block: no complete fenced block under %q in %s", heading, path)
}

// frrDryRun checks an FRR config the two ways FRR 8.4 offers, which need no
// running daemon: vtysh -C parses every line (it knows all daemons'
// commands), and bgpd -C applies it to a bgpd that neither listens nor talks
// to zebra, which also catches lines in the wrong order ("Specify remote-as
// or peer-group commands first"). Both skip a bad line with a message, and
// bgpd even exits 0, so any output fails the test (but bgpd's complaint
// that no zebra runs).
func frrDryRun(t *testing.T, conf string) {
	t.Helper()
	if _, err := exec.LookPath(vtyshPath); err != nil {
		t.Skipf("skipping: no vtysh (FRR): %v", err)
	}
	// bgpd drops to the frr user before it reads the config: a folder it
	// can read, not t.TempDir (0700).
	dir, err := os.MkdirTemp("", "netlab-frrcheck-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the frr user must read the config
		t.Fatal(err)
	}
	path := filepath.Join(dir, "frr.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil { //nolint:gosec // as above
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vtysh.conf"), nil, 0o644); err != nil { //nolint:gosec // as above
		t.Fatal(err)
	}
	out, err := exec.Command(vtyshPath, "--config_dir", dir, "--vty_socket", dir, "-C", "-f", path).CombinedOutput() //nolint:gosec // FRR's vtysh on a file of this test
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("vtysh -C: %v:\n%s\nconfig:\n%s", err, out, conf)
	}

	if err := AvailableFRR(); err != nil {
		t.Logf("bgpd -C skipped: %v", err)
		return
	}
	_, statErr := os.Stat(frrTmpBase)
	madeTmpBase := errors.Is(statErr, os.ErrNotExist)
	cmd := exec.Command(bgpdPath, "-C", "-f", path, "-u", frrUser, "-g", frrUser, //nolint:gosec // FRR's bgpd on a file of this test
		"-P", "0", "-p", "0", "-Z", "--vty_socket", dir, "-z", filepath.Join(dir, "zserv.api"),
		"-i", filepath.Join(dir, "bgpd.pid"))
	out, err = cmd.CombinedOutput()
	if cmd.Process != nil {
		// A dry run leaves its per-PID folder behind.
		removeFRRTmp("bgpd", cmd.Process.Pid)
	}
	if madeTmpBase {
		_ = os.Remove(frrTmpBase)
	}
	// With a network statement bgpd asks zebra to track the next hop, and
	// there is no zebra in a dry run: that one message is expected.
	var rest []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.TrimSpace(line) != "" && !strings.Contains(line, "sendmsg_nexthop: zclient_send_message() failed") {
			rest = append(rest, line)
		}
	}
	if err != nil || len(rest) > 0 {
		t.Errorf("bgpd -C: %v:\n%s\nconfig:\n%s", err, strings.Join(rest, "\n"), conf)
	}
}

// TestFRRLab runs the ECMP scenario against FRR: the speaker of pkg/bgp
// announces a VIP per family with the three nodes as next hops,
// narrows it to two, survives a router restart and withdraws it; then Close
// must leave no FRR process or file behind.
func TestFRRLab(t *testing.T) {
	l := New(t, Options{Nodes: 3, Speakers: 1, Router: RouterFRR, Password: "s3cret"})
	if l.RouterKind() != RouterFRR {
		t.Fatalf("RouterKind = %q", l.RouterKind())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s := startTestSpeaker(t, l)
	speakers := []netip.Addr{SpeakerAddr(IPv4, 0), SpeakerAddr(IPv6, 0)}
	start := time.Now()
	if err := l.WaitEstablished(ctx, speakers...); err != nil {
		t.Fatal(err)
	}
	t.Logf("sessions established after %v", time.Since(start).Round(time.Millisecond))

	vips := map[Family]netip.Prefix{
		IPv4: netip.MustParsePrefix("198.18.100.1/32"),
		IPv6: netip.MustParsePrefix("2001:db8:100::1/128"),
	}
	setAndWait := func(f Family, hops []netip.Addr) {
		t.Helper()
		if err := s.SetPaths(ctx, vips[f], hops); err != nil {
			t.Fatal(err)
		}
		if err := l.WaitRoute(ctx, vips[f], hops); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []Family{IPv4, IPv6} {
		setAndWait(f, l.NodeAddrs(f)) // one ECMP route over the three nodes
		if out, err := l.Exec(l.Router, "ip", fmt.Sprintf("-%d", f), "route", "show", "proto", "bgp"); err == nil {
			t.Logf("IPv%d kernel routes of FRR:\n%s", f, out)
		}
		setAndWait(f, l.NodeAddrs(f)[:2]) // a withdrawn next hop leaves it
	}

	// A restarted router gets the routes again from the re-connecting
	// speaker.
	pid := l.RouterPID()
	if err := l.RestartRouter(); err != nil {
		t.Fatal(err)
	}
	if l.RouterPID() == pid || processAlive(pid) {
		t.Errorf("bgpd pid %d still running after restart (new pid %d)", pid, l.RouterPID())
	}
	if err := l.WaitEstablished(ctx, speakers...); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Family{IPv4, IPv6} {
		if err := l.WaitRoute(ctx, vips[f], l.NodeAddrs(f)[:2]); err != nil {
			t.Fatal(err)
		}
		setAndWait(f, nil) // withdrawn: no route left
	}
	for _, f := range []Family{IPv4, IPv6} {
		if routes, err := l.Routes(f); err != nil || len(routes) != 0 {
			t.Errorf("IPv%d routes after withdrawal = %v, %v", f, routes, err)
		}
	}

	pids := []int{l.RouterPID()}
	l.routerNS.mu.Lock()
	if l.zebra != nil {
		pids = append(pids, l.zebra.PID())
	}
	l.routerNS.mu.Unlock()
	dir := l.Dir
	s.Stop()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for i, pid := range pids {
		if processAlive(pid) {
			t.Errorf("FRR pid %d alive after Close", pid)
		}
		tmp := filepath.Join(frrTmpBase, fmt.Sprintf("%s.%d", []string{"bgpd", "zebra"}[i], pid))
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", tmp, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("dir %s left: %v", dir, err)
	}
	if !strings.Contains(l.RouterLog(), "bgpd 8.") {
		t.Errorf("router log after Close lacks bgpd's start line:\n%s", l.RouterLog())
	}
}

// startTestSpeaker runs a pkg/bgp speaker from speaker address 0 with one
// peer per family to the lab's router, until the test ends.
func startTestSpeaker(t *testing.T, l *Lab) *bgp.Speaker {
	t.Helper()
	cfg := bgp.Config{ASN: l.Opts.SpeakerASN, RouterID: SpeakerAddr(IPv4, 0)}
	for _, f := range []Family{IPv4, IPv6} {
		cfg.Peers = append(cfg.Peers, bgp.Peer{
			Address:      RouterAddr(f),
			ASN:          l.Opts.RouterASN,
			LocalAddress: SpeakerAddr(f, 0),
			Password:     l.Opts.password(0),
		})
	}
	s, err := bgp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		s.Stop()
		if err := <-errc; err != nil {
			t.Errorf("speaker: %v", err)
		}
	})
	return s
}

// TestFRRReap checks that a lab stops the FRR daemons of a lab whose test
// process died, found by their pid files, and nothing else: a stand-in
// daemon (a shell started with its pid file's path on its command line) is
// stopped, the test process, named by a second pid file, is not.
func TestFRRReap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skipping: the lab lock's clean-up needs root")
	}
	dir, err := os.MkdirTemp("", "netlab-reaptest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Mkdir(filepath.Join(dir, "frr"), 0o700); err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "frr", "zebra.pid")
	// "; :" keeps the shell from replacing itself with sleep.
	cmd := exec.Command("sh", "-c", "sleep 60; :", pidFile) //nolint:gosec // a path of this test
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	for name, pid := range map[string]int{"zebra.pid": cmd.Process.Pid, "bgpd.pid": os.Getpid()} {
		if err := os.WriteFile(filepath.Join(dir, "frr", name), []byte(fmt.Sprintf("%d\n", pid)), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	lock, err := acquireLock() // reaps, with no other lab alive
	if err != nil {
		t.Fatal(err)
	}
	_ = lock.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Errorf("stand-in daemon %d still running", cmd.Process.Pid)
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pid file %s left: %v", pidFile, err)
	}
}
