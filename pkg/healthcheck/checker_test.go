package healthcheck

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestNext(t *testing.T) {
	o := Options{FailuresToWithdraw: 2, SuccessesToReturn: 3}
	for _, tc := range []struct {
		name    string
		from    State
		results []bool
		want    []State
	}{
		{name: "first pass decides", from: Unknown, results: []bool{true}, want: []State{Healthy}},
		{name: "first failure decides", from: Unknown, results: []bool{false}, want: []State{Unhealthy}},
		{name: "withdrawn after two failures in a row", from: Healthy,
			results: []bool{false, false}, want: []State{Healthy, Unhealthy}},
		{name: "a pass between failures resets", from: Healthy,
			results: []bool{false, true, false, true}, want: []State{Healthy, Healthy, Healthy, Healthy}},
		{name: "returned after three passes in a row", from: Unhealthy,
			results: []bool{true, true, false, true, true, true}, want: []State{Unhealthy, Unhealthy, Unhealthy, Unhealthy, Unhealthy, Healthy}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, fails, passes := tc.from, 0, 0
			for i, r := range tc.results {
				s, fails, passes = next(s, fails, passes, r, o)
				if s != tc.want[i] {
					t.Fatalf("after result %d (%v): %v, want %v", i, r, s, tc.want[i])
				}
			}
		})
	}
}

// server is a health endpoint whose answer the test sets.
func server(t *testing.T, status *atomic.Int32) (*httptest.Server, netip.AddrPort) {
	t.Helper()
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Add(1)
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(`{"lastUpdated": "now"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, netip.MustParseAddrPort(srv.Listener.Addr().String())
}

func TestProber(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	srv, addr := server(t, &status)
	p := newProber(addr, "/healthz", 5*time.Second)
	defer p.close()
	ctx := context.Background()
	if !p.check(ctx) {
		t.Fatal("200: check failed")
	}
	if p.conn == nil {
		t.Fatal("the connection was not kept")
	}
	kept := p.conn
	if !p.check(ctx) || p.conn != kept {
		t.Error("second check did not pass on the kept connection")
	}
	// The server closes the idle connection: the next check dials again
	// within its deadline and passes.
	srv.CloseClientConnections()
	if !p.check(ctx) {
		t.Error("check after the server closed the connection failed")
	}
	status.Store(http.StatusServiceUnavailable)
	if p.check(ctx) {
		t.Error("503: check passed")
	}
	if wrong := newProber(addr, "/other", 5*time.Second); wrong.check(ctx) {
		t.Error("404: check passed")
	}
	srv.Close()
	if p.check(ctx) {
		t.Error("closed server: check passed")
	}
}

func TestCheckerFollowsTargets(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	_, addr := server(t, &status)
	changed := make(chan netip.AddrPort, 16)
	c := New(Options{Interval: 10 * time.Millisecond, Timeout: 5 * time.Second, FailuresToWithdraw: 2, SuccessesToReturn: 2},
		func(a netip.AddrPort) { changed <- a }, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	dead := netip.MustParseAddrPort("127.0.0.1:1") // nothing listens on port 1
	c.Set([]netip.AddrPort{addr, dead})
	waitState := func(a netip.AddrPort, want State) {
		t.Helper()
		deadline := time.After(30 * time.Second)
		for c.State(a) != want {
			select {
			case <-changed:
			case <-deadline:
				t.Fatalf("%s: %v, want %v", a, c.State(a), want)
			}
		}
	}
	waitState(addr, Healthy)
	waitState(dead, Unhealthy)
	status.Store(http.StatusServiceUnavailable)
	waitState(addr, Unhealthy)
	status.Store(http.StatusOK)
	waitState(addr, Healthy)
	if got := c.Counts(); got[Healthy] != 1 || got[Unhealthy] != 1 {
		t.Errorf("counts %v, want one healthy and one unhealthy", got)
	}
	c.Set([]netip.AddrPort{dead})
	if got := c.State(addr); got != Unknown {
		t.Errorf("removed target: %v, want unknown", got)
	}
}

func TestReadAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, in   string
		wantStatus int
		wantKeep   bool
		wantErr    bool
		rest       string // what the reader has left
	}{
		{name: "kube-proxy's 200", in: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}NEXT",
			wantStatus: 200, wantKeep: true, rest: "NEXT"},
		{name: "503", in: "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 2\r\n\r\nnoNEXT", wantStatus: 503, wantKeep: true, rest: "NEXT"},
		{name: "connection close", in: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", wantStatus: 200},
		{name: "HTTP/1.0", in: "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", wantStatus: 200},
		{name: "chunked", in: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", wantStatus: 200},
		{name: "no length", in: "HTTP/1.1 200 OK\r\n\r\n", wantStatus: 200},
		{name: "body too long", in: "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n", wantStatus: 200},
		{name: "not HTTP", in: "SSH-2.0-OpenSSH\r\n", wantErr: true},
		{name: "bad status", in: "HTTP/1.1 2x0 OK\r\n\r\n", wantErr: true},
		{name: "cut short", in: "HTTP/1.1 200 OK\r\nContent-", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReader(strings.NewReader(tc.in))
			status, keep, err := readAnswer(br)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if status != tc.wantStatus || keep != tc.wantKeep {
				t.Errorf("status %d keep %v, want %d %v", status, keep, tc.wantStatus, tc.wantKeep)
			}
			if tc.wantKeep {
				rest, _ := io.ReadAll(br)
				if string(rest) != tc.rest {
					t.Errorf("left %q, want %q", rest, tc.rest)
				}
			}
		})
	}
}
