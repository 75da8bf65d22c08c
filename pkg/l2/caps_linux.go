package l2

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrNoNetRaw is returned by RaiseNetRaw when the process may not have
// CAP_NET_RAW: answering ARP and Neighbor Solicitations takes raw sockets.
var ErrNoNetRaw = errors.New("CAP_NET_RAW is neither effective nor permitted: L2 pools cannot be answered (the chart grants it with agent.l2, or when the rendered config has an L2 pool; the plain manifest is deploy/node-agent/agent-l2.yaml; docs/l2.md)")

// RaiseNetRaw makes CAP_NET_RAW effective in every thread of the process
// when it is permitted (the image's agent holds it as a permitted file
// capability, so that it starts without it when no L2 pool asks for it).
// It is nil at once when the capability is already effective (root).
func RaiseNetRaw() error {
	c, err := netRawCaps()
	if err != nil {
		return err
	}
	if c.word().Effective&c.bit != 0 {
		return nil
	}
	if c.word().Permitted&c.bit == 0 {
		return ErrNoNetRaw
	}
	c.word().Effective |= c.bit
	if err := c.set(); err != nil {
		return fmt.Errorf("raise CAP_NET_RAW: %w", err)
	}
	return nil
}

// DropNetRaw removes CAP_NET_RAW from every thread of the process for good
// (effective, permitted and inheritable): an agent without an L2 pool
// never opens a raw socket, so it does not keep the capability a pod may
// grant its container (the chart grants it to every agent, so that an L2
// pool added later works after the restart the change brings). It is nil
// at once when the process does not have it.
func DropNetRaw() error {
	c, err := netRawCaps()
	if err != nil {
		return err
	}
	w := c.word()
	if (w.Permitted|w.Effective|w.Inheritable)&c.bit == 0 {
		return nil
	}
	w.Effective &^= c.bit
	w.Permitted &^= c.bit
	w.Inheritable &^= c.bit
	if err := c.set(); err != nil {
		return fmt.Errorf("drop CAP_NET_RAW: %w", err)
	}
	return nil
}

// HasNetRaw reports whether CAP_NET_RAW is in the process's permitted set.
func HasNetRaw() (bool, error) {
	c, err := netRawCaps()
	if err != nil {
		return false, err
	}
	return c.word().Permitted&c.bit != 0, nil
}

// caps are the calling thread's capability sets, and CAP_NET_RAW's bit.
type caps struct {
	hdr  unix.CapUserHeader
	data [2]unix.CapUserData
	bit  uint32
}

func netRawCaps() (*caps, error) {
	c := &caps{hdr: unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, bit: uint32(1) << (unix.CAP_NET_RAW % 32)}
	if err := unix.Capget(&c.hdr, &c.data[0]); err != nil {
		return nil, fmt.Errorf("capget: %w", err)
	}
	return c, nil
}

// word is the half of the sets that holds CAP_NET_RAW.
func (c *caps) word() *unix.CapUserData { return &c.data[unix.CAP_NET_RAW/32] }

// set sets c in every thread: capabilities are per thread, and any of the
// runtime's may open the sockets.
func (c *caps) set() error {
	// The pointers are converted in the call itself, as unsafe.Pointer's
	// rules for system calls ask; no wrapper sets every thread.
	//nolint:gosec // capset(2) takes pointers to its header and data
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&c.hdr)), uintptr(unsafe.Pointer(&c.data[0])), 0); errno != 0 {
		return errno
	}
	return nil
}
