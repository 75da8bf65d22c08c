package framework

import (
	"os"
	"testing"
	"time"
)

func TestParseCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 120 0 0 20 0 12 0 100 0 0\n"
	got, err := parseCPU([]byte(stat))
	if err != nil {
		t.Fatal(err)
	}
	if want := 370 * clockTick; got != want {
		t.Errorf("CPU = %v, want %v", got, want)
	}
	if _, err := parseCPU([]byte("4242 (x) S 1 2")); err == nil {
		t.Error("short stat: no error")
	}
}

func TestParseSchedstat(t *testing.T) {
	got, err := parseSchedstat([]byte("2970932 323073 2\n"))
	if err != nil || got != 2970932*time.Nanosecond {
		t.Errorf("parseSchedstat = %v, %v; want 2.970932ms", got, err)
	}
	for _, bad := range []string{"", "x 1 2"} {
		if _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q): no error", bad)
		}
	}
}

// A busy loop of 20 ms shows in the CPU time, which ticks of 10 ms could
// round to one tick or none; nanoseconds cannot (where the kernel has them).
func TestReadProcStatSelfCPUInNanoseconds(t *testing.T) {
	if _, ok := threadsCPU(os.Getpid()); !ok {
		t.Skip("no /proc/PID/task/TID/schedstat on this kernel")
	}
	before, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for start := time.Now(); time.Since(start) < 20*time.Millisecond; {
	}
	after, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.CPU - before.CPU; d <= 0 || d%clockTick == 0 {
		t.Errorf("CPU went from %v to %v: want a positive difference that is not whole ticks", before.CPU, after.CPU)
	}
}

func TestReadProcStatSelf(t *testing.T) {
	st, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.RSS == 0 || st.PeakRSS < st.RSS || st.CPU < 0 || st.CPU > time.Hour {
		t.Errorf("ReadProcStat(self) = %+v", st)
	}
}
