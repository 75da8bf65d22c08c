package framework

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of the CPU times in /proc/PID/stat: USER_HZ, which
// Linux fixes at 100 for user space on every architecture it supports.
const clockTick = 10 * time.Millisecond

// ProcStat is what /proc says about a process's resource use.
type ProcStat struct {
	// RSS is the resident set size now (VmRSS), in bytes.
	RSS uint64
	// PeakRSS is the highest resident set size so far (VmHWM), in bytes.
	PeakRSS uint64
	// AnonRSS and FileRSS are the anonymous (heap, stacks) and file-backed
	// (the binary's pages) parts of RSS (RssAnon, RssFile), in bytes.
	AnonRSS, FileRSS uint64
	// CPU is the CPU time used so far, user and system, in nanoseconds where
	// the kernel keeps them (the sum of the threads' /proc/PID/task/TID/schedstat),
	// else in USER_HZ ticks of 10 ms (/proc/PID/stat). Ticks are too coarse
	// for a window of a few seconds: an idle process can use none in 3 s.
	// The per-thread sum leaves out threads that have exited, which a Go
	// program's do not while it runs.
	CPU time.Duration
}

// ReadProcStat reads the resource use of process pid from /proc/PID/status
// and /proc/PID/stat.
func ReadProcStat(pid int) (ProcStat, error) {
	var st ProcStat
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, fmt.Errorf("read process %d status: %w", pid, err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch key {
		case "VmRSS":
			st.RSS, err = parseKiB(value)
		case "VmHWM":
			st.PeakRSS, err = parseKiB(value)
		case "RssAnon":
			st.AnonRSS, err = parseKiB(value)
		case "RssFile":
			st.FileRSS, err = parseKiB(value)
		}
		if err != nil {
			return st, fmt.Errorf("process %d status %s: %w", pid, key, err)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, fmt.Errorf("read process %d stat: %w", pid, err)
	}
	if st.CPU, err = parseCPU(stat); err != nil {
		return st, fmt.Errorf("process %d stat: %w", pid, err)
	}
	if ns, ok := threadsCPU(pid); ok {
		st.CPU = ns
	}
	return st, nil
}

// threadsCPU sums the time on a CPU of every thread of process pid, from the
// first field of /proc/PID/task/TID/schedstat (nanoseconds). ok is false
// where the kernel has no schedstat or the process is gone.
func threadsCPU(pid int) (time.Duration, bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat")) //nolint:gosec // under /proc/PID/task
		if errors.Is(err, os.ErrNotExist) && task.Name() != strconv.Itoa(pid) {
			continue // a thread that exited while the list was read
		}
		if err != nil {
			return 0, false
		}
		ns, err := parseSchedstat(b)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return sum, true
}

// parseSchedstat reads the time on a CPU (the first field, in nanoseconds)
// of a /proc/PID/task/TID/schedstat such as "2970932 323073 2".
func parseSchedstat(b []byte) (time.Duration, error) {
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0, fmt.Errorf("empty schedstat")
	}
	ns, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("schedstat time %q: %w", fields[0], err)
	}
	return time.Duration(ns), nil
}

// parseKiB reads a /proc/PID/status size such as "  123456 kB".
func parseKiB(s string) (uint64, error) {
	n, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "kB")), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	return n * 1024, nil
}

// parseCPU reads utime and stime (fields 14 and 15) of /proc/PID/stat. The
// command name (field 2) is in parentheses and may hold spaces, so the fields
// are counted after its closing parenthesis.
func parseCPU(stat []byte) (time.Duration, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	// fields[0] is field 3 (state), so field n is fields[n-3].
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("CPU time %q: %w", f, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * clockTick, nil
}
