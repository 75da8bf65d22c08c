package framework

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BMC is a real IPMI 2.0 BMC: OpenIPMI's ipmi_sim on a loopback UDP port,
// whose chassis power is the machine command it runs (power on starts it,
// power off sends it SIGTERM). User and Password are its admin's.
type BMC struct {
	Addr           netip.AddrPort
	User, Password string
	// UserFile and PasswordFile hold User and Password, for settings that
	// take credentials from files.
	UserFile, PasswordFile string
	process                *Process
	// stopped: the BMC is frozen (SetReachable false).
	stopped bool
}

// BMCAvailable reports why a BMC cannot run here (ipmi_sim or ipmitool
// missing), or nil.
func BMCAvailable() error {
	for _, bin := range []string{"ipmi_sim", "ipmitool"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("a BMC needs %s (run hack/install-deps.sh as root): %w", bin, err)
		}
	}
	return nil
}

// StartBMC starts a BMC whose machine is machine (a command line, run by
// /bin/sh), powered on, and stops it (and the machine) at the end of the
// test. It skips the test, saying why, when a BMC cannot run here.
//
// Its ports are picked free a moment before ipmi_sim binds them, so that a
// busy machine may take one in between: ipmi_sim then stops reading its
// config at that line and answers nothing. Such a start is stopped and
// tried again with fresh ports; the machine command, which comes after the
// ports in the config, has not run.
func StartBMC(t testing.TB, name, machine string) *BMC {
	t.Helper()
	if err := BMCAvailable(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	const attempts = 5
	for attempt := 1; ; attempt++ {
		// The serial port (the machine's VM interface, which the chassis
		// power control needs) is a TCP listener.
		port, err := freeUDPPort()
		var serial int
		if err == nil {
			serial, err = freeTCPPort()
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := startBMC(dir, name, machine, attempt, port, serial)
		if err == nil {
			t.Cleanup(func() {
				_ = b.SetReachable(true) // a frozen BMC would stop only at SIGKILL
				b.process.Stop(5 * time.Second)
			})
			return b
		}
		if !errors.Is(err, errBMCPortTaken) || attempt == attempts {
			t.Fatalf("BMC %s, start %d of at most %d: %v", name, attempt, attempts, err)
		}
		t.Logf("BMC %s, start %d: %v; again with other ports", name, attempt, err)
	}
}

// errBMCPortTaken: a port picked for the BMC was taken before it bound it.
var errBMCPortTaken = errors.New("a port was taken before the BMC bound it")

// bmcUpWithin bounds a BMC's start until it answers ipmitool.
const bmcUpWithin = 20 * time.Second

// startBMC is one start of StartBMC's BMC on UDP port (RMCP+) and TCP port
// serial, its files in dir: the BMC answering, or an error and nothing left
// running.
func startBMC(dir, name, machine string, attempt, port, serial int) (*BMC, error) {
	b := &BMC{Addr: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)), User: "admin", Password: "bmc-" + name, //nolint:gosec // a port
		UserFile: filepath.Join(dir, "user"), PasswordFile: filepath.Join(dir, "password")}
	lan := fmt.Sprintf(`name %q
set_working_mc 0x20
  startlan 1
    addr 127.0.0.1 %d
    priv_limit admin
    allowed_auths_admin none md2 md5 straight
    guid a123456789abcdefa123456789abcdef
  endlan
  serial 15 127.0.0.1 %d codec VM
  startcmd %q
  startnow true
  poweroff_wait 1
  kill_wait 2
  user 2 true %q %q admin 10 none md2 md5 straight
`, name, port, serial, "/bin/sh -c '"+strings.ReplaceAll(machine, "'", `'\''`)+"'", b.User, b.Password)
	emu := "mc_setbmc 0x20\nmc_add 0x20 0 no-device-sdrs 0x23 9 8 0x9f 0x1291 0xf02 persist_sdr\nsel_enable 0x20 1000 0x0a\nmc_enable 0x20\n"
	for path, content := range map[string]string{"lan.conf": lan, "node.emu": emu, "user": b.User + "\n", "password": b.Password + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, path), []byte(content), 0o600); err != nil {
			return nil, err
		}
	}
	state := filepath.Join(dir, "state")
	if err := os.RemoveAll(state); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	var err error
	b.process, err = StartProcess("bmc-"+name, filepath.Join(dir, fmt.Sprintf("ipmi_sim-%d.log", attempt)), false, "ipmi_sim",
		"-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "node.emu"), "-s", state, "-n")
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(bmcUpWithin)
	for {
		out, err := b.IPMITool("chassis", "power", "status")
		if err == nil && strings.Contains(out, "on") {
			return b, nil
		}
		taken := b.process.LogContains("address already in use")
		if taken || b.process.Exited() || time.Now().After(deadline) {
			tail := b.process.LogTail(20)
			b.process.Stop(5 * time.Second)
			if taken {
				return nil, fmt.Errorf("%w (UDP %d, TCP %d): %s", errBMCPortTaken, port, serial, tail)
			}
			return nil, fmt.Errorf("not up in %s: %v %s\n%s", bmcUpWithin, err, out, tail) //nolint:errorlint // err may be nil: its text only
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// IPMITool runs ipmitool against the BMC (an independent client), with
// cipher suite 3 named (without it, ipmitool first spends seconds
// discovering the suites).
func (b *BMC) IPMITool(args ...string) (string, error) {
	base := []string{"-I", "lanplus", "-H", b.Addr.Addr().String(), "-p", fmt.Sprint(b.Addr.Port()), "-U", b.User, "-P", b.Password, "-C", "3", "-N", "1", "-R", "2"}
	out, err := exec.Command("ipmitool", append(base, args...)...).CombinedOutput() //nolint:gosec // the test's own BMC
	return string(out), err
}

// PoweredOn is the machine's power as the BMC tells an independent client
// (ipmitool chassis power status).
func (b *BMC) PoweredOn() (bool, error) {
	out, err := b.IPMITool("chassis", "power", "status")
	if err != nil {
		return false, fmt.Errorf("ipmitool chassis power status: %w %s", err, out)
	}
	return strings.Contains(out, "is on"), nil
}

// Power switches the machine on or off through the BMC, as an operator
// would, and waits until the BMC says it is so; it fails the test if not.
func (b *BMC) Power(t testing.TB, on bool) {
	t.Helper()
	if err := b.SetPower(on); err != nil {
		t.Fatal(err)
	}
}

// SetPower switches the machine on or off through the BMC (ipmitool
// chassis power on|off) and waits up to 15 s until the BMC says it is so.
func (b *BMC) SetPower(on bool) error {
	want := "off"
	if on {
		want = "on"
	}
	if out, err := b.IPMITool("chassis", "power", want); err != nil {
		return fmt.Errorf("ipmitool chassis power %s: %w %s", want, err, out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		out, err := b.IPMITool("chassis", "power", "status")
		if err == nil && strings.Contains(out, "is "+want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the BMC does not say power %s within 15s: %v %s", want, err, out) //nolint:errorlint // err may be nil: its text only
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// SetReachable freezes the BMC (SIGSTOP, by PID: it answers nothing, and
// its questions run into their timeout, as those to a BMC whose network is
// gone) or lets it go on (SIGCONT). Its machine goes on as it was.
func (b *BMC) SetReachable(reachable bool) error {
	if reachable == !b.stopped {
		return nil
	}
	sig := syscall.SIGCONT
	if !reachable {
		sig = syscall.SIGSTOP
	}
	if err := syscall.Kill(b.process.PID(), sig); err != nil {
		return fmt.Errorf("BMC %s: %w", b.Addr, err)
	}
	b.stopped = !reachable
	return nil
}

// freeTCPPort is a TCP port on 127.0.0.1 that was free a moment ago.
func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free TCP port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeUDPPort is a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free UDP port: %w", err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}
