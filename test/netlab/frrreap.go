package netlab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// reapFRR stops the FRR daemons of labs whose test process died. BIRD dies
// with the test process (parent-death signal), but zebra and bgpd change
// their user, and the kernel then drops that signal. Each daemon is found by
// the pid file it wrote in its lab's folder and stopped by that PID, and
// only if the process still runs with that pid file, so a reused PID is
// left alone. Called with the machine-wide lock held: no other lab exists.
func reapFRR() {
	pidFiles, _ := filepath.Glob(filepath.Join(os.TempDir(), "netlab-*", "frr", "*.pid"))
	for _, pf := range pidFiles {
		b, err := os.ReadFile(pf) //nolint:gosec // a pid file of a lab of this package
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			continue
		}
		if startedWithArg(pid, pf) {
			framework.StopPID(pid, routerStopGrace)
			removeFRRTmp(strings.TrimSuffix(filepath.Base(pf), ".pid"), pid)
		}
		_ = os.Remove(pf)
	}
}

// startedWithArg reports whether process pid runs with arg on its command
// line.
func startedWithArg(pid int, arg string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return false
	}
	for _, a := range strings.Split(string(b), "\x00") {
		if a == arg {
			return true
		}
	}
	return false
}
