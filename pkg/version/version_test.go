package version

import (
	"runtime"
	"testing"
)

func TestStringUnstamped(t *testing.T) {
	if Version() != Dev {
		t.Fatalf("Version() = %q in an unstamped test binary, want %q", Version(), Dev)
	}
	want := Dev + " (revision unknown, " + runtime.Version() + ")"
	if got := String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}
