package member

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrBadKey is returned when a key file does not hold a key of 16, 24 or 32
// bytes, raw or base64.
var ErrBadKey = errors.New("not a key of 16, 24 or 32 bytes (raw or base64)")

// ReadKey reads the membership's key (l2.secretFile) from path; "" is no
// key. The file holds the key's bytes or their base64 (as a Secret created
// with kubectl from a file or a literal does).
func ReadKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path) //nolint:gosec // the operator names the file in the cloud-config
	if err != nil {
		return nil, fmt.Errorf("l2.secretFile: %w", err)
	}
	if validKeySize(len(b)) {
		return b, nil
	}
	dec, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || !validKeySize(len(dec)) {
		return nil, fmt.Errorf("l2.secretFile %s: %w", path, ErrBadKey)
	}
	return dec, nil
}

func validKeySize(n int) bool { return n == 16 || n == 24 || n == 32 }
