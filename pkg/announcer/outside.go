package announcer

import "sync/atomic"

// outsidePools counts the Services' status addresses an announcer leaves
// out because they are in no pool (Options.Addresses and InPools refuse
// them). The map is the run loop's; the total may be read at any time.
type outsidePools struct {
	byService map[string]int
	total     atomic.Int64
}

// set records that key's Service has n addresses left out.
func (o *outsidePools) set(key string, n int) {
	old := o.byService[key]
	if old == n {
		return
	}
	if n == 0 {
		delete(o.byService, key)
	} else {
		if o.byService == nil {
			o.byService = map[string]int{}
		}
		o.byService[key] = n
	}
	o.total.Add(int64(n - old))
}

// Resync makes the announcer look at every Service again, as after a node
// change: for an Options.Addresses whose answer changed (a config reload
// that changed the pools).
func (a *Announcer) Resync() { a.nodesChanged() }

// OutsidePools is how many addresses of the Services' status the announcer
// leaves out now for being in no pool.
func (a *Announcer) OutsidePools() int { return int(a.outside.total.Load()) }
