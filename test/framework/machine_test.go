package framework

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMachineFollowsItsBMC powers a machine off and on through a real BMC
// (ipmi_sim, with ipmitool): its daemons (here sleep processes standing in
// for containerd, the kubelet and kube-proxy) are stopped and resumed, and
// its link set down and up; a frozen BMC answers nothing and changes no
// power.
func TestMachineFollowsItsBMC(t *testing.T) {
	if err := BMCAvailable(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	n := &RealNode{Name: "machine-test"}
	for _, p := range []**Process{&n.Containerd, &n.Kubelet, &n.KubeProxy} {
		proc, err := StartProcess("sleep", filepath.Join(dir, "sleep.log"), false, "sleep", "600")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { proc.Stop(time.Second) })
		*p = proc
	}
	var mu sync.Mutex
	var links []bool
	m := NewMachine(n, func(up bool) error {
		mu.Lock()
		defer mu.Unlock()
		links = append(links, up)
		return nil
	})
	b := m.AttachBMC(t)
	linksNow := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprint(links)
	}

	b.Power(t, false)
	waitUntil(t, "the machine off", func() bool { return !m.OffSince().IsZero() && allState(t, n, "T") })
	if got := linksNow(); got != "[false]" {
		t.Errorf("links after power off: %s, want [false]", got)
	}
	b.Power(t, true)
	waitUntil(t, "the machine on", func() bool { return m.OffSince().IsZero() && allState(t, n, "S") })
	if got := linksNow(); got != "[false true]" {
		t.Errorf("links after power on: %s, want [false true]", got)
	}

	if err := b.SetReachable(false); err != nil {
		t.Fatal(err)
	}
	if out, err := b.IPMITool("chassis", "power", "status"); err == nil {
		t.Errorf("a frozen BMC answered: %s", out)
	}
	if err := b.SetReachable(true); err != nil {
		t.Fatal(err)
	}
	if out, err := b.IPMITool("chassis", "power", "status"); err != nil || !strings.Contains(out, "is on") {
		t.Errorf("the BMC let go: %v %s, want power on", err, out)
	}
	if !m.OffSince().IsZero() {
		t.Error("freezing the BMC powered the machine off")
	}
}

// allState reports whether every daemon of n is in that /proc state (T:
// stopped, S: sleeping).
func allState(t *testing.T, n *RealNode, state string) bool {
	t.Helper()
	for _, p := range []*Process{n.Containerd, n.Kubelet, n.KubeProxy} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.PID()))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, _ := strings.Cut(string(b), ") ")
		if !strings.HasPrefix(rest, state) {
			return false
		}
	}
	return true
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBMCPortTaken starts a BMC whose serial port another listener took
// after it was picked: the start fails as such (StartBMC then tries other
// ports), quickly, and leaves nothing running.
func TestBMCPortTaken(t *testing.T) {
	if err := BMCAvailable(); err != nil {
		t.Skip(err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	port, err := freeUDPPort()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b, err := startBMC(t.TempDir(), "taken", "exec sleep 100000", 1, port, taken.Addr().(*net.TCPAddr).Port)
	if err == nil {
		b.process.Stop(5 * time.Second)
		t.Fatal("a BMC started on a taken serial port")
	}
	if !errors.Is(err, errBMCPortTaken) {
		t.Fatalf("got %v, want %v", err, errBMCPortTaken)
	}
	if took := time.Since(start); took > bmcUpWithin {
		t.Errorf("the failed start took %s", took)
	}
	// And StartBMC's own ports give a BMC that answers.
	if out, err := StartBMC(t, "free", "exec sleep 100000").IPMITool("chassis", "power", "status"); err != nil || !strings.Contains(out, "is on") {
		t.Errorf("StartBMC: %v %s", err, out)
	}
}
