package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is the garbage collector's target (GOGC) unless the environment
// sets GOGC: the heap may grow by a quarter of the live heap between
// collections instead of doubling (Go's default, 100). The CCM's live heap
// is mostly long-lived (informer caches, the BGP paths), so its RSS is about
// the heap goal plus the binary's pages: at 5,000 nodes and 10,000 Services
// 25 keeps it under 300 MiB where 100 needs about 400, for about 2% of a core
// more while idle (docs/performance.md, "At the goal size", has the figures
// of both).
const gcPercent = 25

// setGCPercent applies gcPercent when GOGC is not set.
func setGCPercent() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(gcPercent)
	}
}
