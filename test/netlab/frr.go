package netlab

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// Where Debian's frr package puts FRR; the daemons are not on PATH.
var (
	zebraPath = "/usr/lib/frr/zebra"
	bgpdPath  = "/usr/lib/frr/bgpd"
	bfddPath  = "/usr/lib/frr/bfdd"
	vtyshPath = lookPath("vtysh", "/usr/bin")
)

// frrUser is the user the FRR daemons drop to (Debian's package creates it).
const frrUser = "frr"

// frrTmpBase is where every FRR daemon keeps a per-PID folder (crash logs);
// FRR offers no option to move it. A daemon that exits normally removes its
// own folder.
const frrTmpBase = "/var/tmp/frr"

// lookPath finds a binary on PATH, or in dir, which a user's PATH may lack.
func lookPath(name, dir string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return filepath.Join(dir, name)
}

// AvailableFRR reports why a lab with Router RouterFRR cannot run here, or
// nil.
func AvailableFRR() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("netlab needs root (euid %d)", os.Geteuid())
	}
	for _, bin := range []string{"ip", zebraPath, bgpdPath, vtyshPath} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("netlab with FRR needs %s (run hack/install-deps.sh as root): %w", bin, err)
		}
	}
	if _, err := user.Lookup(frrUser); err != nil {
		return fmt.Errorf("netlab with FRR needs the user %q of the frr package: %w", frrUser, err)
	}
	return nil
}

// FRRDir holds the FRR daemons' config, pid files and vty sockets; it belongs
// to the frr user, which the daemons run as.
func (n *routerNS) FRRDir() string { return filepath.Join(n.dir, "frr") }

func (n *routerNS) frrFile(name string) string { return filepath.Join(n.FRRDir(), name) }

func (n *routerNS) frrLogPath(daemon string) string { return filepath.Join(n.dir, daemon+".log") }

// Vtysh runs vtysh commands against the lab's FRR daemons (and only them:
// its own vty socket folder and an empty vtysh.conf, never /etc/frr or
// /var/run/frr) and returns the output.
func (n *routerNS) Vtysh(commands ...string) (string, error) {
	return n.vtyshTo("", commands...)
}

// vtyshTo runs vtysh commands against one daemon ("" = all).
func (n *routerNS) vtyshTo(daemon string, commands ...string) (string, error) {
	args := []string{"--vty_socket", n.FRRDir(), "--config_dir", n.FRRDir()}
	if daemon != "" {
		args = append(args, "-d", daemon)
	}
	for _, c := range commands {
		args = append(args, "-c", c)
	}
	return output(vtyshPath, args...)
}

// runFRR writes bgpd's config conf (with zebra's defaults) into FRRDir and
// runs zebra, then bfdd with bfddConf when it is not "", then bgpd, in n's namespace, each until it answers on its
// vty socket, and bgpd until it has at least wantSessions neighbours (a
// listen range adds more as they connect). The daemons' PIDs stay in n,
// whose closeRouter stops them.
func (n *routerNS) runFRR(conf, bfddConf string, wantSessions int) error {
	if err := n.writeFRRFiles(conf, bfddConf); err != nil {
		return err
	}
	if _, err := os.Stat(frrTmpBase); errors.Is(err, os.ErrNotExist) {
		n.mu.Lock()
		n.frrMadeTmpBase = true
		n.mu.Unlock()
	}
	common := []string{"-u", frrUser, "-g", frrUser,
		"-P", "0", // no TCP vty; vtysh uses the sockets in FRRDir
		"--vty_socket", n.FRRDir(), "-z", n.frrFile("zserv.api"), "--log", "stdout"}
	zebra, err := n.startFRRDaemon("zebra", zebraPath, slices.Concat(common,
		[]string{"-f", n.frrFile("zebra.conf"), "-i", n.frrFile("zebra.pid")})...)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.zebra = zebra
	n.mu.Unlock()
	if bfddConf != "" {
		bfdd, err := n.startFRRDaemon("bfdd", bfddPath, slices.Concat(common,
			[]string{"-f", n.frrFile("bfdd.conf"), "-i", n.frrFile("bfdd.pid"), "--bfdctl", n.frrFile("bfdd.sock")})...)
		if err != nil {
			return err
		}
		n.mu.Lock()
		n.bfdd = bfdd
		n.mu.Unlock()
	}
	bgpd, err := n.startFRRDaemon("bgpd", bgpdPath, slices.Concat(common,
		[]string{"-f", n.frrFile("frr.conf"), "-i", n.frrFile("bgpd.pid")})...)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.bgpd = bgpd
	n.mu.Unlock()
	// Ready when bgpd has read its config: every session is there.
	deadline := time.Now().Add(10 * time.Second)
	for {
		states, err := n.frrSessionStates()
		if err == nil && len(states) >= wantSessions {
			break
		}
		if bgpd.Exited() || time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("sessions %v", states)
			}
			return fmt.Errorf("bgpd does not have the %d sessions of its config: %w; log:\n%s", wantSessions, err, bgpd.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// FRR skips a config line it cannot apply and runs on: fail instead.
	if log := bgpd.Log(); strings.Contains(log, "on config line") {
		return fmt.Errorf("bgpd skipped lines of its config; log:\n%s", log)
	}
	return nil
}

// writeFRRFiles makes FRRDir, owned by the frr user, with bgpd's config
// conf, zebra's (defaults) and an empty vtysh.conf (so vtysh reads nothing of
// /etc/frr).
func (n *routerNS) writeFRRFiles(conf, bfddConf string) error {
	u, err := user.Lookup(frrUser)
	if err != nil {
		return fmt.Errorf("frr user: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return fmt.Errorf("frr user: %w", err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return fmt.Errorf("frr user: %w", err)
	}
	// The daemons drop to the frr user before they read their config and
	// write pid files and sockets: they must get through Dir (made 0700).
	if err := os.Chmod(n.dir, 0o711); err != nil { //nolint:gosec // traversal only; the files in Dir are 0600
		return fmt.Errorf("frr dir: %w", err)
	}
	dir := n.FRRDir()
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("frr dir: %w", err)
	}
	files := map[string]string{
		"frr.conf":   conf,
		"zebra.conf": "! zebra of test/netlab's router: defaults only\nhostname netlab-router\n",
		"vtysh.conf": "",
		"bfdd.conf":  bfddConf,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o640); err != nil { //nolint:gosec // for the frr group too, as FRR's own files
			return fmt.Errorf("frr config: %w", err)
		}
	}
	for _, p := range []string{dir, filepath.Join(dir, "frr.conf"), filepath.Join(dir, "zebra.conf"), filepath.Join(dir, "bfdd.conf")} {
		if err := os.Chown(p, uid, gid); err != nil {
			return fmt.Errorf("frr dir: %w", err)
		}
	}
	return nil
}

// startFRRDaemon runs one daemon in the router namespace in the foreground
// (so the lab has its PID) until its vty socket answers.
func (n *routerNS) startFRRDaemon(name, bin string, args ...string) (*framework.Process, error) {
	p, err := framework.StartProcess(name, n.frrLogPath(name), false,
		"ip", append([]string{"netns", "exec", n.ns, bin}, args...)...)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := n.vtyshTo(name, "show version")
		if err == nil {
			return p, nil
		}
		if p.Exited() || time.Now().After(deadline) {
			p.Stop(routerStopGrace)
			removeFRRTmp(name, p.PID())
			return nil, fmt.Errorf("%s did not answer on its vty socket in %s (%w); log:\n%s", name, n.FRRDir(), err, p.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopFRR stops bgpd, then zebra (which then removes bgpd's kernel routes),
// by PID; n.mu is held.
func (n *routerNS) stopFRR() {
	for _, p := range []**framework.Process{&n.bgpd, &n.bfdd, &n.zebra} {
		if *p != nil {
			(*p).Stop(routerStopGrace)
			removeFRRTmp((*p).Name, (*p).PID())
			*p = nil
		}
	}
}

// removeFRRTmp removes the per-PID folder of a daemon that did not exit
// normally (killed after the grace time): exactly its own folder.
func removeFRRTmp(name string, pid int) {
	_ = os.RemoveAll(filepath.Join(frrTmpBase, fmt.Sprintf("%s.%d", name, pid)))
}

// closeFRR removes FRR's temporary base folder if the lab made it and it is
// empty again; n.mu is held.
func (n *routerNS) closeFRR() {
	if n.frrMadeTmpBase {
		_ = os.Remove(frrTmpBase) // fails, and keeps it, if anything is left
	}
}

// frrLog is zebra's and bgpd's output.
func (n *routerNS) frrLog() string {
	var b strings.Builder
	for _, d := range []string{"bgpd", "bfdd", "zebra"} {
		fmt.Fprintf(&b, "=== %s ===\n%s\n", d, readLog(d, n.frrLogPath(d)))
	}
	return b.String()
}

// parseFRRNeighbors reads `show bgp neighbors json`: an object keyed by
// neighbor address whose bgpState is "Established", "Active", ..., the same
// words BIRD uses.
func parseFRRNeighbors(data []byte) (map[netip.Addr]string, error) {
	ns, err := parseFRRNeighborFields(data)
	if err != nil {
		return nil, err
	}
	states := map[netip.Addr]string{}
	for a, n := range ns {
		states[a] = n.BgpState
	}
	return states, nil
}

// frrNeighbor is what the lab reads of a neighbor in `show bgp neighbors
// json`.
type frrNeighbor struct {
	BgpState string `json:"bgpState"`
	// RemoteRouterID is the neighbor's router ID ("0.0.0.0" before its
	// OPEN).
	RemoteRouterID string `json:"remoteRouterId"`
	// NeighborAddr is the address of an interface neighbour (neighbor
	// IFACE interface, keyed by its interface), once learned.
	NeighborAddr string `json:"bgpNeighborAddr"`
}

// parseFRRNeighborFields reads `show bgp neighbors json`, keyed by
// neighbor address: an interface neighbour's, keyed by its interface, is
// its address there once learned (other keys are skipped).
func parseFRRNeighborFields(data []byte) (map[netip.Addr]frrNeighbor, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("netlab parse FRR neighbors: %w", err)
	}
	out := map[netip.Addr]frrNeighbor{}
	for key, v := range raw {
		a, err := netip.ParseAddr(key)
		if err != nil {
			var n frrNeighbor
			if json.Unmarshal(v, &n) != nil {
				continue // not a neighbor
			}
			if a, err = netip.ParseAddr(n.NeighborAddr); err == nil {
				out[a.WithZone("")] = n
			}
			continue
		}
		var n frrNeighbor
		if err := json.Unmarshal(v, &n); err != nil {
			return nil, fmt.Errorf("netlab parse FRR neighbor %s: %w", key, err)
		}
		out[a] = n
	}
	return out, nil
}

// checkFRRPassword refuses what FRR's config cannot carry: a password is one
// word.
func checkFRRPassword(pw string) error {
	if strings.IndexFunc(pw, func(r rune) bool { return unicode.IsSpace(r) || !unicode.IsPrint(r) }) >= 0 {
		return errors.New("an FRR password must be one word of printable characters")
	}
	return nil
}
