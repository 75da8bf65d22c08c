package config

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"time"
)

// ErrRestart says that a changed config takes effect only at a restart of
// the process that reads it (RestartFields).
var ErrRestart = errors.New("the changed config takes a restart")

// RestartSpread bounds the random wait of a process before it stops for a
// changed config (RestartDelay): every replica and node agent sees the
// change within the kubelet's sync of the mounted ConfigMap, and the wait
// keeps them from stopping together, so that the leader's Lease, the BGP
// sessions and the L2 membership move one process at a time.
const RestartSpread = 15 * time.Second

// RestartDelay is a random wait within RestartSpread.
func RestartDelay() time.Duration {
	return time.Duration(rand.Int64N(int64(RestartSpread))) //nolint:gosec // jitter, not a secret
}

// WatchInterval is how often WatchFile looks at the file. A mounted
// ConfigMap changes by a symlink swap, which a poll sees like any write.
const WatchInterval = 2 * time.Second

// WatchFile calls changed with the content of the file at path each time
// it differs from the last seen (the first being the content at the call),
// looking every interval, until ctx ends or changed returns false. A read
// that fails is tried again at the next look: a ConfigMap update swaps a
// symlink, and a read can fail in between.
func WatchFile(ctx context.Context, path string, interval time.Duration, changed func(data []byte) bool) {
	last, _ := os.ReadFile(path) //nolint:gosec // the operator's --cloud-config
	lastSum := sha256.Sum256(last)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		data, err := os.ReadFile(path) //nolint:gosec // the operator's --cloud-config
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		if bytes.Equal(sum[:], lastSum[:]) {
			continue
		}
		lastSum = sum
		if !changed(data) {
			return
		}
	}
}
