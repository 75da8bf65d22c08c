package bgp

import (
	"fmt"
	"sort"

	"github.com/go-logr/logr"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
)

// GoBGP's own messages go to klog at these verbosities.
const (
	gobgpInfoV  = 4 // errors, warnings and information
	gobgpDebugV = 5
)

// gobgpLogger routes GoBGP's logger to a logr.Logger (klog), structured.
type gobgpLogger struct {
	l logr.Logger
}

var _ gobgplog.Logger = gobgpLogger{}

func newGoBGPLogger(l logr.Logger) gobgpLogger {
	return gobgpLogger{l: l.WithName("gobgp")}
}

// keysAndValues flattens GoBGP's fields in a stable order.
func keysAndValues(fields gobgplog.Fields) []any {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		kv = append(kv, k, fields[k])
	}
	return kv
}

// Panic logs and panics: GoBGP calls it on a bug of its own.
func (g gobgpLogger) Panic(msg string, fields gobgplog.Fields) {
	g.l.Error(nil, msg, keysAndValues(fields)...)
	panic(fmt.Sprintf("gobgp: %s", msg))
}

// Fatal logs and panics: GoBGP expects it not to return, and a library must
// not exit the process.
func (g gobgpLogger) Fatal(msg string, fields gobgplog.Fields) {
	g.l.Error(nil, msg, keysAndValues(fields)...)
	panic(fmt.Sprintf("gobgp: %s", msg))
}

// Error logs at V(4), with GoBGP's level as a key.
func (g gobgpLogger) Error(msg string, fields gobgplog.Fields) { g.log("error", msg, fields) }

// Warn logs at V(4), with GoBGP's level as a key.
func (g gobgpLogger) Warn(msg string, fields gobgplog.Fields) { g.log("warning", msg, fields) }

// Info logs at V(4).
func (g gobgpLogger) Info(msg string, fields gobgplog.Fields) { g.log("info", msg, fields) }

// Debug logs at V(5).
func (g gobgpLogger) Debug(msg string, fields gobgplog.Fields) {
	g.l.V(gobgpDebugV).Info(msg, keysAndValues(fields)...)
}

func (g gobgpLogger) log(level, msg string, fields gobgplog.Fields) {
	if l := g.l.V(gobgpInfoV); l.Enabled() {
		l.Info(msg, append([]any{"level", level}, keysAndValues(fields)...)...)
	}
}

// SetLevel does nothing: klog's verbosity decides.
func (g gobgpLogger) SetLevel(gobgplog.LogLevel) {}

// GetLevel tells GoBGP whether to build debug messages at all.
func (g gobgpLogger) GetLevel() gobgplog.LogLevel {
	if g.l.V(gobgpDebugV).Enabled() {
		return gobgplog.DebugLevel
	}
	return gobgplog.InfoLevel
}
