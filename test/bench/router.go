package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// routerPoll is how often the router's kernel routes are read: the
// resolution of every router figure.
const routerPoll = 100 * time.Millisecond

// routeTable maps each prefix BIRD installed to its sorted next hops.
type routeTable map[netip.Prefix][]netip.Addr

// birdStats reads the router's counts of paths received and withdrawn on
// its IPv4 session with the CCM ("Import updates" and "Import withdraws",
// column "received", of `birdc show protocols all`).
func (e *env) birdStats() (updates, withdraws float64, err error) {
	out, err := e.lab.Birdc("show", "protocols", "all", "spk4_0")
	if err != nil {
		return 0, 0, fmt.Errorf("bench: router stats: %w", err)
	}
	return parseBirdStats(out)
}

// parseBirdStats reads the counts of the one protocol and channel of out.
func parseBirdStats(out string) (updates, withdraws float64, err error) {
	ps := netlab.ParseBirdProtocols(out)
	if len(ps) != 1 || len(ps[0].ImportUpdates) != 1 || len(ps[0].ImportWithdraws) != 1 {
		return 0, 0, fmt.Errorf("bench: router stats: no import counts in %q", out)
	}
	return ps[0].ImportUpdates[0], ps[0].ImportWithdraws[0], nil
}

// routerWatch polls the router's routes in the background until a
// condition holds, and keeps the time it was first seen to.
type routerWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	at     time.Time
	err    error
}

// watchRouter starts polling the router until cond holds (nil without a
// router).
func (e *env) watchRouter(ctx context.Context, what string, cond func(routeTable) (bool, string)) *routerWatch {
	if e.lab == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	rw := &routerWatch{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(rw.done)
		rw.err = e.waitForEvery(ctx, routerPoll, "router: "+what, func() (bool, string) {
			routes, err := e.lab.Routes(netlab.IPv4)
			if err != nil {
				return false, err.Error()
			}
			t := routeTable{}
			for _, r := range routes {
				t[r.Prefix] = r.NextHops
			}
			ok, last := cond(t)
			if ok {
				rw.at = time.Now()
			}
			return ok, last
		})
	}()
	return rw
}

// wait returns when the condition was first seen to hold.
func (rw *routerWatch) wait() (time.Time, error) {
	<-rw.done
	return rw.at, rw.err
}

// stop ends the polling, if it still runs; rw may be nil.
func (rw *routerWatch) stop() {
	if rw != nil {
		rw.cancel()
		<-rw.done
	}
}

// everyRoute is a router condition: every prefix that prefixes returns
// (none yet: not done) has exactly the next hops want.
func everyRoute(prefixes func() []netip.Prefix, want []netip.Addr) func(routeTable) (bool, string) {
	want = slices.Clone(want)
	slices.SortFunc(want, netip.Addr.Compare)
	return func(t routeTable) (bool, string) {
		ps := prefixes()
		if len(ps) == 0 {
			return false, "no prefixes yet"
		}
		bad := 0
		for _, p := range ps {
			if !slices.Equal(t[p], want) {
				bad++
			}
		}
		return bad == 0, fmt.Sprintf("%d of %d routes without next hops %v", bad, len(ps), want)
	}
}

// pathChange is a "BGP paths changed" line of the CCM's speaker (V(2)).
type pathChange struct {
	at               time.Time
	prefix           netip.Prefix
	added, withdrawn int
}

var pathChangeRE = regexp.MustCompile(`"BGP paths changed".* prefix="([^"]+)".* added=(\d+) withdrawn=(\d+)`)

// logTail reads the lines the CCM logs after an offset, a batch at a time.
type logTail struct {
	path    string
	off     int64
	partial string
}

// next returns the complete lines added since the last call.
func (t *logTail) next() ([]string, error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("bench: CCM log: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(t.off, io.SeekStart); err != nil {
		return nil, fmt.Errorf("bench: CCM log: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var lines []string
	for {
		s, err := r.ReadString('\n')
		t.off += int64(len(s))
		if errors.Is(err, io.EOF) {
			t.partial += s
			return lines, nil
		}
		if err != nil {
			return lines, fmt.Errorf("bench: CCM log: %w", err)
		}
		lines = append(lines, t.partial+strings.TrimSuffix(s, "\n"))
		t.partial = ""
	}
}

// parsePathChange reads a speaker line; ok is false for other lines.
func parsePathChange(line string, year int) (pathChange, bool) {
	m := pathChangeRE.FindStringSubmatch(line)
	if m == nil || len(line) < 21 {
		return pathChange{}, false
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		return pathChange{}, false
	}
	prefix, err := netip.ParsePrefix(m[1])
	if err != nil {
		return pathChange{}, false
	}
	added, _ := strconv.Atoi(m[2])
	withdrawn, _ := strconv.Atoi(m[3])
	return pathChange{at: at.AddDate(year, 0, 0), prefix: prefix, added: added, withdrawn: withdrawn}, true
}

// speakerWatch is what the CCM's speaker logged after an offset.
type speakerWatch struct {
	tail logTail
	// last is, per prefix, the latest change that matched.
	last map[netip.Prefix]time.Time
	// changes counts every change line; errors the announcer's failures.
	changes, errors int
}

func (e *env) speakerFrom(offset int64) *speakerWatch {
	return &speakerWatch{tail: logTail{path: e.ccm.LogPath, off: offset}, last: map[netip.Prefix]time.Time{}}
}

// read takes in the lines logged since the last read.
func (sw *speakerWatch) read(match func(pathChange) bool) error {
	lines, err := sw.tail.next()
	year := time.Now().Year()
	for _, l := range lines {
		if strings.Contains(l, `"Cannot announce; retrying"`) {
			sw.errors++
			continue
		}
		c, ok := parsePathChange(l, year)
		if !ok {
			continue
		}
		sw.changes++
		if match == nil || match(c) {
			sw.last[c.prefix] = c.at
		}
	}
	return err
}

// waitSpeaker reads the CCM's log until every prefix has a change that
// matches, and returns the time of the latest. It applies only to this
// repository's CCM, whose speaker logs its changes at -v=2.
func (e *env) waitSpeaker(ctx context.Context, sw *speakerWatch, prefixes []netip.Prefix, match func(pathChange) bool) (time.Time, error) {
	var latestAt time.Time
	err := e.waitForEvery(ctx, routerPoll, "speaker log", func() (bool, string) {
		if err := sw.read(match); err != nil {
			return false, err.Error()
		}
		missing := 0
		latestAt = time.Time{}
		for _, p := range prefixes {
			t, ok := sw.last[p]
			if !ok {
				missing++
			} else if t.After(latestAt) {
				latestAt = t
			}
		}
		return missing == 0, fmt.Sprintf("%d of %d prefixes without a matching change logged", missing, len(prefixes))
	})
	return latestAt, err
}

// ours says whether the CCM is this repository's (whose logs the harness reads).
func (e *env) ours() bool { return e.o.CCMCommand == "" }
