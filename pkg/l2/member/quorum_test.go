package member

import "testing"

func TestHasQuorum(t *testing.T) {
	for _, tc := range []struct {
		name            string
		alive, expected []string
		want            bool
	}{
		{"nothing expected", []string{"a"}, nil, false},
		{"nothing at all", nil, nil, false},
		{"alone of one", []string{"a"}, []string{"a"}, true},
		{"one of two", []string{"a"}, []string{"a", "b"}, false},
		{"two of two", []string{"a", "b"}, []string{"a", "b"}, true},
		{"two of three", []string{"a", "b"}, []string{"a", "b", "c"}, true},
		{"one of three", []string{"a"}, []string{"a", "b", "c"}, false},
		{"two of four", []string{"a", "b"}, []string{"a", "b", "c", "d"}, false},
		{"three of four", []string{"a", "b", "c"}, []string{"a", "b", "c", "d"}, true},
		{"three of five", []string{"c", "a", "e"}, []string{"a", "b", "c", "d", "e"}, true},
		// A lone agent whose membership forgot the dead: the expected set
		// still holds them, so it is a minority.
		{"forgotten dead", []string{"a"}, []string{"a", "b", "c"}, false},
		{"alive but not expected", []string{"a", "x", "y"}, []string{"a", "b", "c"}, false},
		{"duplicates alive", []string{"a", "a", "a"}, []string{"a", "b", "c"}, false},
		{"duplicates expected", []string{"a", "b"}, []string{"a", "b", "b", "c"}, true},
		{"none alive", nil, []string{"a"}, false},
	} {
		if got := HasQuorum(tc.alive, tc.expected); got != tc.want {
			t.Errorf("%s: HasQuorum(%v, %v) = %v, want %v", tc.name, tc.alive, tc.expected, got, tc.want)
		}
	}
}
