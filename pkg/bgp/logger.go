package bgp

import (
	"context"
	"log/slog"
	"strings"

	"github.com/go-logr/logr"
)

// GoBGP's own messages go to klog at these verbosities.
const (
	gobgpInfoV  = 4 // errors, warnings and information
	gobgpDebugV = 5
)

// newGoBGPLogger is GoBGP's logger: slog records written to l (klog),
// structured, at V(4) with GoBGP's level as a key, and its debug messages at
// V(5). GoBGP's errors are about sessions it retries by itself; the
// speaker reports what matters (PeerStates, the announcer's errors).
func newGoBGPLogger(l logr.Logger) *slog.Logger {
	return slog.New(gobgpHandler{next: logr.ToSlogHandler(l.WithName("gobgp"))})
}

// gobgpHandler moves GoBGP's levels to the verbosities above.
type gobgpHandler struct {
	next slog.Handler
}

// verbosity is the slog level of GoBGP's level l: logr's slog handler
// writes level -N at V(N).
func verbosity(l slog.Level) slog.Level {
	if l < slog.LevelInfo {
		return -gobgpDebugV
	}
	return -gobgpInfoV
}

func (h gobgpHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, verbosity(l))
}

func (h gobgpHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, verbosity(r.Level), r.Message, r.PC)
	if r.Level >= slog.LevelInfo {
		out.AddAttrs(slog.String("level", strings.ToLower(r.Level.String())))
	}
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h gobgpHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return gobgpHandler{next: h.next.WithAttrs(attrs)}
}

func (h gobgpHandler) WithGroup(name string) slog.Handler {
	return gobgpHandler{next: h.next.WithGroup(name)}
}
