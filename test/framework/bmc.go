package framework

import (
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
func StartBMC(t testing.TB, name, machine string) *BMC {
	t.Helper()
	if err := BMCAvailable(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	port, err := freeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
	serial, err := freeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
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
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	b.process, err = StartProcess("bmc-"+name, filepath.Join(dir, "ipmi_sim.log"), false, "ipmi_sim",
		"-c", filepath.Join(dir, "lan.conf"), "-f", filepath.Join(dir, "node.emu"), "-s", filepath.Join(dir, "state"), "-n")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = b.SetReachable(true) // a frozen BMC would stop only at SIGKILL
		b.process.Stop(5 * time.Second)
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := b.IPMITool("chassis", "power", "status")
		if err == nil && strings.Contains(out, "on") {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("BMC %s not up in 10s: %v %s\n%s", name, err, out, b.process.LogTail(20))
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

// freeUDPPort is a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free UDP port: %w", err)
	}
	defer func() { _ = c.Close() }()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}
