package framework

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Machine is a real node's machine, which can lose its power as a
// machine does: its node's link goes down (it neither answers nor resets)
// and its containerd, kubelet and kube-proxy are frozen (SIGSTOP, by PID),
// so that its Lease and status are no longer renewed (the kubelet reaches
// the API server through a relay in the node's namespace, not through its
// link). Power on is the reverse. Its pods' containers keep running behind
// the down link: nothing outside the node sees them.
type Machine struct {
	Node *RealNode
	// link sets the node's link down or up (the lab's SetNodeLink).
	link func(up bool) error

	mu sync.Mutex
	// frozen, linkDown: what of the power-off is in effect.
	frozen, linkDown bool
	// offAt is when the machine last lost its power (zero: it has it).
	offAt time.Time
	// errs are the power changes that failed under a BMC, told at the end
	// of the test.
	errs []error
}

// NewMachine is the machine of node n, whose link link sets down or up.
func NewMachine(n *RealNode, link func(up bool) error) *Machine {
	return &Machine{Node: n, link: link}
}

// PowerOff cuts the machine's power (a second call does nothing): the
// daemons are frozen first, so that nothing more is reported, then the
// link goes down.
func (m *Machine) PowerOff() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.offAt.IsZero() {
		return nil
	}
	m.offAt = time.Now()
	m.frozen = true
	for _, p := range m.daemons() {
		if err := syscall.Kill(p.PID(), syscall.SIGSTOP); err != nil {
			return fmt.Errorf("power off %s: freeze %s: %w", m.Node.Name, p.Name, err)
		}
	}
	m.linkDown = true
	if err := m.link(false); err != nil {
		return fmt.Errorf("power off %s: link down: %w", m.Node.Name, err)
	}
	return nil
}

// PowerOn undoes what of PowerOff is in effect: containerd, the kubelet
// and kube-proxy go on (SIGCONT), then the link comes up.
func (m *Machine) PowerOn() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	if m.frozen {
		for _, p := range m.daemons() {
			if err := syscall.Kill(p.PID(), syscall.SIGCONT); err != nil && !p.Exited() {
				errs = append(errs, fmt.Errorf("power on %s: resume %s: %w", m.Node.Name, p.Name, err))
			}
		}
		m.frozen = false
	}
	if m.linkDown {
		if err := m.link(true); err != nil {
			errs = append(errs, fmt.Errorf("power on %s: link up: %w", m.Node.Name, err))
		} else {
			m.linkDown = false
		}
	}
	if len(errs) == 0 {
		m.offAt = time.Time{}
	}
	return errors.Join(errs...)
}

// OffSince is when the machine lost its power, or zero while it has it.
func (m *Machine) OffSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.offAt
}

// daemons are the node's processes a power-off freezes, containerd first
// (it is resumed first, before the kubelet asks it anything).
func (m *Machine) daemons() []*Process {
	var ps []*Process
	for _, p := range []*Process{m.Node.Containerd, m.Node.Kubelet, m.Node.KubeProxy} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// AttachBMC gives the machine a BMC (StartBMC) whose chassis power is the
// machine's power: ipmitool's `chassis power off` powers the node off,
// `chassis power on` powers it on, and the BMC's power status is the
// node's. The BMC's machine command is a process that holds a loopback
// TCP connection to this test process: the BMC starts it at power on (the
// connection opens: PowerOn) and stops it at power off (SIGTERM; the
// connection closes: PowerOff). At the end of the test the machine is
// powered on before its node stops (a frozen kubelet would only stop at
// SIGKILL), and the BMC's own stop changes nothing.
func (m *Machine) AttachBMC(t testing.TB) *BMC {
	t.Helper()
	if err := BMCAvailable(); err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// A folder of its own with a short name: the script's path goes into
	// the BMC's config unquoted.
	dir, err := os.MkdirTemp("", "mccm-machine-")
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// bash's /dev/tcp holds the connection until the BMC's SIGTERM ends
	// bash (or the test process closes it).
	script := filepath.Join(dir, "machine.sh")
	body := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d || exit 1\nread -r -u 3 _\n", ln.Addr().(*net.TCPAddr).Port)
	if err := os.WriteFile(script, []byte(body), 0o600); err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	w := &powerWatch{m: m, ln: ln, done: make(chan struct{})}
	go w.serve()
	t.Cleanup(w.close) // if the BMC does not start (close may run twice)
	// Stopped before the BMC (cleanups run last first): the BMC's stop
	// kills the machine process, which is no power-off.
	b := StartBMC(t, m.Node.Name, "exec /bin/bash "+script)
	w.arm()
	t.Cleanup(func() {
		w.close()
		if err := m.PowerOn(); err != nil {
			t.Errorf("power on %s at the end of the test: %v", m.Node.Name, err)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, err := range m.errs {
			t.Errorf("machine %s under its BMC: %v", m.Node.Name, err)
		}
	})
	return b
}

// powerWatch turns the machine process's connections into power changes.
type powerWatch struct {
	m    *Machine
	ln   net.Listener
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	conn net.Conn // the running machine process's, if any
	// closed: the test is ending; the machine's end is no power-off.
	closed bool
	// armed: the BMC is up. Before, a machine process's end is no
	// power-off (a start of the BMC that failed, stopped with it).
	armed bool
}

func (w *powerWatch) serve() {
	defer close(w.done)
	for {
		c, err := w.ln.Accept()
		if err != nil {
			return // closed
		}
		w.mu.Lock()
		if w.closed {
			w.mu.Unlock()
			_ = c.Close()
			return
		}
		w.conn = c
		w.wg.Add(1)
		w.mu.Unlock()
		w.set(true)
		go w.hold(c)
	}
}

// hold waits for the machine process to end (its connection closes), which
// is the power-off, unless the test is ending or the BMC was not up yet.
func (w *powerWatch) hold(c net.Conn) {
	defer w.wg.Done()
	_, _ = io.Copy(io.Discard, c)
	_ = c.Close()
	w.mu.Lock()
	// Only the end of the running machine process, once the BMC is up,
	// is a power-off.
	off := !w.closed && w.armed && w.conn == c
	if w.conn == c {
		w.conn = nil
	}
	w.mu.Unlock()
	if off {
		w.set(false)
	}
}

// arm makes the machine process's end a power-off from now on.
func (w *powerWatch) arm() {
	w.mu.Lock()
	w.armed = true
	w.mu.Unlock()
}

func (w *powerWatch) set(on bool) {
	var err error
	if on {
		err = w.m.PowerOn()
	} else {
		err = w.m.PowerOff()
	}
	if err != nil {
		w.m.mu.Lock()
		w.m.errs = append(w.m.errs, err)
		w.m.mu.Unlock()
	}
}

// close stops turning connections into power changes.
func (w *powerWatch) close() {
	w.mu.Lock()
	w.closed = true
	if w.conn != nil {
		_ = w.conn.Close()
	}
	w.mu.Unlock()
	_ = w.ln.Close()
	<-w.done
	w.wg.Wait()
}
