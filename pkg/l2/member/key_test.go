package member

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadKeys(t *testing.T) {
	raw := []byte("0123456789abcdef")
	other := []byte("0123456789abcdef01234567")
	b64 := base64.StdEncoding.EncodeToString
	for _, tc := range []struct {
		name    string
		content []byte
		want    [][]byte
		err     error
	}{
		{"raw 16 bytes", raw, [][]byte{raw}, nil},
		{"base64 with a newline", []byte(b64(raw) + "\n"), [][]byte{raw}, nil},
		{"two keys, the first encrypts", []byte(b64(other) + "\n" + b64(raw) + "\n"), [][]byte{other, raw}, nil},
		{"too short", []byte("short"), nil, ErrBadKey},
		{"empty", []byte("\n"), nil, ErrBadKey},
		{"base64 of the wrong size", []byte(b64([]byte("short"))), nil, ErrBadKey},
		{"a bad second key", []byte(b64(raw) + "\n" + b64([]byte("short"))), nil, ErrBadKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(p, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadKeys(p)
			if !errors.Is(err, tc.err) || !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("ReadKeys = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	if k, err := ReadKeys(""); k != nil || err != nil {
		t.Errorf(`ReadKeys("") = %q, %v; want no key, no error`, k, err)
	}
	if _, err := ReadKeys(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ReadKey of a missing file: no error")
	}
}
