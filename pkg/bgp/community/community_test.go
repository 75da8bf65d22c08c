package community

import (
	"errors"
	"testing"
)

func TestParseList(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // Set.String of the result
		wantErr bool
	}{
		{in: "", want: ""},
		{in: "  ", want: ""},
		{in: "65000:100", want: "65000:100"},
		{in: "0:0,65535:65535", want: "0:0,65535:65535"},
		{in: "no-export", want: "no-export"},
		{in: "NO-EXPORT", want: "no-export"},
		{in: "65535:65281", want: "no-export"}, // the same value by number
		{in: "blackhole, graceful-shutdown", want: "graceful-shutdown,blackhole"},
		{in: "64512:1:2", want: "64512:1:2"},
		{in: "4294967295:4294967295:4294967295", want: "4294967295:4294967295:4294967295"},
		{in: "65000:200, 65000:100,65000:100 ,64512:1:2", want: "65000:100,65000:200,64512:1:2"},
		{in: "65536:1", wantErr: true},
		{in: "1:65536", wantErr: true},
		{in: "4294967296:1:1", wantErr: true},
		{in: "-1:1", wantErr: true},
		{in: "+1:1", wantErr: true},
		{in: "1 :1", wantErr: true},
		{in: "1:", wantErr: true},
		{in: ":1", wantErr: true},
		{in: "1:2:3:4", wantErr: true},
		{in: "65000", wantErr: true},
		{in: "no-such-name", wantErr: true},
		{in: "65000:100,,65000:200", wantErr: true},
		{in: "0x10:1", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseList(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseList(%q) = %v, %v; want an error wrapping ErrInvalid", tc.in, got, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseList(%q): %v", tc.in, err)
			}
			if got.String() != tc.want {
				t.Fatalf("ParseList(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestKinds(t *testing.T) {
	s, err := ParseList("65000:100,no-export,64512:1:2")
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Standard) != 2 || s.Standard[0] != 65000<<16|100 || s.Standard[1] != 0xFFFFFF01 {
		t.Errorf("standard = %v", s.Standard)
	}
	if len(s.Large) != 1 || s.Large[0] != (Large{64512, 1, 2}) {
		t.Errorf("large = %v", s.Large)
	}
	if _, err := ParseStandard("64512:1:2"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseStandard of a large community: %v", err)
	}
	if _, err := ParseLarge("65000:100"); !errors.Is(err, ErrInvalid) {
		t.Errorf("ParseLarge of a standard community: %v", err)
	}
}

func TestSetOperations(t *testing.T) {
	must := func(s string) Set {
		out, err := ParseList(s)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, b := must("65000:1,65000:2,1:1:1"), must("65000:2,65000:3,1:1:2")
	if got := a.Union(b).String(); got != "65000:1,65000:2,65000:3,1:1:1,1:1:2" {
		t.Errorf("union = %s", got)
	}
	if got := a.Outside(b).String(); got != "65000:1,1:1:1" {
		t.Errorf("outside = %s", got)
	}
	if !a.Outside(a.Union(b)).Empty() {
		t.Errorf("a outside a∪b = %s, want empty", a.Outside(a.Union(b)))
	}
	if !a.Equal(must("1:1:1, 65000:2,65000:1")) || a.Equal(b) {
		t.Errorf("Equal is wrong")
	}
	if !(Set{}).Union(Set{}).Empty() {
		t.Errorf("empty union not empty")
	}
}

// FuzzParseList: whatever ParseList accepts, its String reads back as the
// same set, and ParseList never panics.
func FuzzParseList(f *testing.F) {
	for _, s := range []string{"65000:100", "no-export,64512:1:2", "", "1:2:3:4", "65536:1", " blackhole , 0:0 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseList(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseList(%q): error %v does not wrap ErrInvalid", in, err)
			}
			return
		}
		again, err := ParseList(s.String())
		if err != nil {
			t.Fatalf("ParseList(%q) = %q, which does not read back: %v", in, s, err)
		}
		if !again.Equal(s) {
			t.Fatalf("ParseList(%q) = %q, read back as %q", in, s, again)
		}
	})
}
