// Command dropnetraw drops CAP_NET_RAW with pkg/l2's DropNetRaw and checks
// that it is gone: not permitted, a packet socket refused, and RaiseNetRaw
// unable to have it again. Built without cgo by TestDropNetRaw (the drop
// sets every thread, which a cgo binary cannot); exit 0: as expected.
package main

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/metal-ccm/metal-ccm/pkg/l2"
)

func main() {
	if err := check(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func check() error {
	if has, err := l2.HasNetRaw(); err != nil || !has {
		return fmt.Errorf("CAP_NET_RAW not permitted before the drop (%v): run as root", err)
	}
	if err := l2.DropNetRaw(); err != nil {
		return err
	}
	if has, err := l2.HasNetRaw(); err != nil || has {
		return fmt.Errorf("CAP_NET_RAW still permitted after the drop (%v)", err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM, 0)
	if err == nil {
		_ = unix.Close(fd)
		return errors.New("a packet socket opened after the drop")
	}
	if !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("a packet socket after the drop: %w, want EPERM", err)
	}
	if err := l2.RaiseNetRaw(); !errors.Is(err, l2.ErrNoNetRaw) {
		return fmt.Errorf("RaiseNetRaw after the drop: %v, want ErrNoNetRaw", err)
	}
	return nil
}
