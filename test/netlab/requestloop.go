package netlab

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// Request is one request of a FailoverLoop: when it started, and whether it
// was answered.
type Request struct {
	At  time.Time
	OK  bool
	Err error
}

// FailoverLoop requests an address from the L2 lab's client over and over,
// a new connection each time, each within 300 ms, 50 ms apart when
// answered: a client of a failover, whose requests say when it ended.
type FailoverLoop struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	reqs   []Request
}

// StartFailoverLoop starts a FailoverLoop from the client to vip.
func (l *L2Lab) StartFailoverLoop(vip netip.Addr) *FailoverLoop {
	return startFailoverLoop(l.Client, vip)
}

// StartFailoverLoop starts a FailoverLoop from the routed lab's client to
// vip, through the router.
func (l *Lab) StartFailoverLoop(vip netip.Addr) *FailoverLoop {
	return startFailoverLoop(l.Client, vip)
}

// startFailoverLoop runs a FailoverLoop in the client's namespace ns.
func startFailoverLoop(ns string, vip netip.Addr) *FailoverLoop {
	ctx, cancel := context.WithCancel(context.Background())
	r := &FailoverLoop{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ctx.Err() == nil {
			at := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err := getIn(rctx, ns, VIPURL(vip))
			rcancel()
			if ctx.Err() != nil {
				return
			}
			r.mu.Lock()
			r.reqs = append(r.reqs, Request{At: at, OK: err == nil, Err: err})
			r.mu.Unlock()
			if err == nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	return r
}

// StopAfter lets the loop run d more, stops it and returns its requests.
func (r *FailoverLoop) StopAfter(d time.Duration) Requests {
	time.Sleep(d)
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// Requests are a loop's requests in order.
type Requests []Request

// Timeline is each request's start after from and its outcome, for logs.
func (rs Requests) Timeline(from time.Time) string {
	var b strings.Builder
	for _, r := range rs {
		mark := "ok"
		if !r.OK {
			mark = "x"
		}
		fmt.Fprintf(&b, " %s:%s", r.At.Sub(from).Round(10*time.Millisecond), mark)
	}
	return b.String()
}

// FirstError is the first failed request's error, for logs.
func (rs Requests) FirstError() error {
	for _, r := range rs {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// Failed counts the requests that started after from and failed.
func (rs Requests) Failed(from time.Time) int {
	n := 0
	for _, r := range rs {
		if !r.At.Before(from) && !r.OK {
			n++
		}
	}
	return n
}

// Recovered is how long after from requests succeeded again: the start of
// the first answered request after the last failed one (0 when none failed
// after from; as long as the loop ran when none was answered after).
func (rs Requests) Recovered(from time.Time) time.Duration {
	last := -1
	for i, r := range rs {
		if !r.At.Before(from) && !r.OK {
			last = i
		}
	}
	if last < 0 {
		return 0
	}
	if last+1 < len(rs) {
		return rs[last+1].At.Sub(from)
	}
	return rs[last].At.Sub(from) + 300*time.Millisecond
}
