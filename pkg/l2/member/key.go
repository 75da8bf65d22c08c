package member

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrBadKey is returned when a key file does not hold keys of 16, 24 or
// 32 bytes, raw or base64.
var ErrBadKey = errors.New("not a key of 16, 24 or 32 bytes (raw, or base64 keys one per line)")

// ReadKeys reads the membership's keys (l2.secretFile) from path; "" is no
// key. The file holds one key's bytes, or one or more keys in base64 (as a
// Secret created with kubectl from a literal or a file does), one per line.
// The first encrypts what this member sends; every one is accepted from
// the others, so that a key is rotated without a split: add the new key
// second everywhere, then put it first, then drop the old one (docs/l2.md).
func ReadKeys(path string) ([][]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path) //nolint:gosec // the operator names the file in the cloud-config
	if err != nil {
		return nil, fmt.Errorf("l2.secretFile: %w", err)
	}
	if validKeySize(len(b)) {
		return [][]byte{b}, nil
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return nil, fmt.Errorf("l2.secretFile %s: empty: %w", path, ErrBadKey)
	}
	keys := make([][]byte, 0, len(fields))
	for i, f := range fields {
		dec, err := base64.StdEncoding.DecodeString(f)
		if err != nil || !validKeySize(len(dec)) {
			return nil, fmt.Errorf("l2.secretFile %s: key %d of %d: %w", path, i+1, len(fields), ErrBadKey)
		}
		keys = append(keys, dec)
	}
	return keys, nil
}

func validKeySize(n int) bool { return n == 16 || n == 24 || n == 32 }
