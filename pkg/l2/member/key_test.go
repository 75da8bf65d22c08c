package member

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestReadKey(t *testing.T) {
	raw := []byte("0123456789abcdef")
	for _, tc := range []struct {
		name    string
		content []byte
		want    []byte
		err     error
	}{
		{"raw 16 bytes", raw, raw, nil},
		{"base64 with a newline", []byte(base64.StdEncoding.EncodeToString(raw) + "\n"), raw, nil},
		{"too short", []byte("short"), nil, ErrBadKey},
		{"base64 of the wrong size", []byte(base64.StdEncoding.EncodeToString([]byte("short"))), nil, ErrBadKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(p, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := ReadKey(p)
			if !errors.Is(err, tc.err) || !slices.Equal(got, tc.want) {
				t.Errorf("ReadKey = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	if k, err := ReadKey(""); k != nil || err != nil {
		t.Errorf(`ReadKey("") = %q, %v; want no key, no error`, k, err)
	}
	if _, err := ReadKey(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("ReadKey of a missing file: no error")
	}
}
