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

func TestReadProcStatSelf(t *testing.T) {
	st, err := ReadProcStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.RSS == 0 || st.PeakRSS < st.RSS || st.CPU < 0 || st.CPU > time.Hour {
		t.Errorf("ReadProcStat(self) = %+v", st)
	}
}
