package netlab

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// HostPrefix is ip as a /32 or /128: the prefix of an announced address.
func HostPrefix(ip netip.Addr) netip.Prefix { return netip.PrefixFrom(ip, ip.BitLen()) }

// VIPURL is http://ip:80/, what ServeVIP answers.
func VIPURL(ip netip.Addr) string { return "http://" + netip.AddrPortFrom(ip, 80).String() + "/" }

// ServeVIP puts ip on the loopback of every node (as kube-proxy would take
// traffic for it) and answers HTTP on port 80 of it with the node's name
// (NodeName), as a backend would. It serves until the lab closes.
func (l *Lab) ServeVIP(ip netip.Addr) error {
	for i := range l.Nodes {
		if err := l.AddLoopbackVIP(i, ip); err != nil {
			return err
		}
		if err := l.ServeHTTP(i, netip.AddrPortFrom(ip, 80).String()); err != nil {
			return err
		}
	}
	return nil
}

// RequestLoop requests a VIP from the client namespace every 20ms, each
// request on a new connection with a 2s timeout, until it is stopped.
type RequestLoop struct {
	sent, failed atomic.Int64
	stop         chan struct{}
	once         sync.Once
	wg           sync.WaitGroup
	mu           sync.Mutex
	firstErrs    []string
}

// maxLoopErrors is how many failures a RequestLoop keeps for its report.
const maxLoopErrors = 5

// StartRequests starts requesting VIPURL(vip) from the client namespace in
// a loop. It runs until Stop, or until the lab closes.
func (l *Lab) StartRequests(vip netip.Addr) *RequestLoop {
	return startRequests(l.ClientGet, l.addCloser, vip)
}

// StartRequests starts requesting VIPURL(vip) from the leaf-spine lab's
// client (behind the spine) in a loop, as Lab.StartRequests.
func (ls *LeafSpine) StartRequests(vip netip.Addr) *RequestLoop {
	return startRequests(ls.ClientGet, ls.AddCloser, vip)
}

// startRequests runs a RequestLoop with get, stopped by addCloser's lab
// closing too.
func startRequests(get func(context.Context, string) (string, error), addCloser func(func()) error, vip netip.Addr) *RequestLoop {
	r := &RequestLoop{stop: make(chan struct{})}
	url := VIPURL(vip)
	r.wg.Go(func() {
		for {
			select {
			case <-r.stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if _, err := get(ctx, url); err != nil {
				r.failed.Add(1)
				r.mu.Lock()
				if len(r.firstErrs) < maxLoopErrors {
					r.firstErrs = append(r.firstErrs, time.Now().Format("15:04:05.000")+" "+err.Error())
				}
				r.mu.Unlock()
			}
			cancel()
			r.sent.Add(1)
			time.Sleep(20 * time.Millisecond)
		}
	})
	// A lab already closed stops the loop at once.
	_ = addCloser(func() { r.Stop() })
	return r
}

// Stop ends the loop, waiting for the request in flight, and returns how
// many requests were sent, how many failed, and the first failures (at most
// five) with their times. Later calls return the same.
func (r *RequestLoop) Stop() (sent, failed int, errs []string) {
	r.once.Do(func() {
		close(r.stop)
		r.wg.Wait()
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return int(r.sent.Load()), int(r.failed.Load()), append([]string(nil), r.firstErrs...)
}

// Answers sends n requests to url with get (a lab's ClientGet: each on a new
// connection, so that a router hashing ports spreads them over its next
// hops) and counts the answers by body (the answering node's name, from
// ServeVIP). It stops at the first failure.
func Answers(ctx context.Context, get func(context.Context, string) (string, error), url string, n int) (map[string]int, error) {
	out := map[string]int{}
	for range n {
		body, err := get(ctx, url)
		if err != nil {
			return out, err
		}
		out[body]++
	}
	return out, nil
}
