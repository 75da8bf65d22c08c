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
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	bit := uint32(1) << (unix.CAP_NET_RAW % 32)
	word := &data[unix.CAP_NET_RAW/32]
	if word.Effective&bit != 0 {
		return nil
	}
	if word.Permitted&bit == 0 {
		return ErrNoNetRaw
	}
	word.Effective |= bit
	// Capabilities are per thread: every thread of the runtime must have
	// it, since any of them may open the sockets.
	// The pointers are converted in the call itself, as unsafe.Pointer's
	// rules for system calls ask; no wrapper sets every thread.
	//nolint:gosec // capset(2) takes pointers to its header and data
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("raise CAP_NET_RAW: %w", errno)
	}
	return nil
}
