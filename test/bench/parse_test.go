package bench

import (
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPromSum(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="GET"} 40
rest_client_requests_total{code="201",host="127.0.0.1:6443",method="POST"} 7
rest_client_requests_total{code="200",host="127.0.0.1:6443",method="PATCH"} 3e+00
rest_client_requests_total_other{method="GET"} 1000
service_controller_loadbalancer_sync_total 12
`
	if got := promSum(text, "rest_client_requests_total", nil); got != 50 {
		t.Errorf("all requests = %v, want 50", got)
	}
	writes := promSum(text, "rest_client_requests_total", func(l string) bool { return !strings.Contains(l, `method="GET"`) })
	if writes != 10 {
		t.Errorf("writes = %v, want 10", writes)
	}
	if got := promSum(text, "service_controller_loadbalancer_sync_total", nil); got != 12 {
		t.Errorf("unlabelled = %v, want 12", got)
	}
	if got := promSum(text, "absent", nil); got != 0 {
		t.Errorf("absent = %v", got)
	}
	line := `apiserver_request_total{code="200",component="apiserver",resource="services",verb="LIST",version="v1"} 3`
	if got := labelValue(line, "resource"); got != "services" {
		t.Errorf("labelValue = %q", got)
	}
}

func TestParseBirdStats(t *testing.T) {
	out := `Name       Proto      Table      State  Since         Info
spk4_0     BGP        ---        up     15:58:01.123  Established
  BGP state:          Established
  Channel ipv4
    State:          UP
    Routes:         30 imported, 0 exported, 30 preferred
    Route change stats:     received   rejected   filtered    ignored   accepted
      Import updates:            120          0          0          0        120
      Import withdraws:           30          0        ---          0         30
      Export updates:              0          0          0        ---          0
`
	u, w, err := parseBirdStats(out)
	if err != nil || u != 120 || w != 30 {
		t.Errorf("parseBirdStats = %v, %v, %v; want 120, 30", u, w, err)
	}
	if _, _, err := parseBirdStats("spk4_0 BGP --- start\n"); err == nil {
		t.Error("no counts: no error")
	}
}

func TestParsePathChange(t *testing.T) {
	line := `I1202 15:58:03.250117   41233 speaker.go:304] "BGP paths changed" logger="announcer" prefix="198.18.130.7/32" ` +
		`nextHops=["198.18.10.11","198.18.10.12"] added=2 withdrawn=1 running=true`
	c, ok := parsePathChange(line, 2026)
	if !ok {
		t.Fatal("not parsed")
	}
	want := time.Date(2026, 12, 2, 15, 58, 3, 250117000, time.Local)
	if !c.at.Equal(want) || c.prefix != netip.MustParsePrefix("198.18.130.7/32") || c.added != 2 || c.withdrawn != 1 {
		t.Errorf("parsePathChange = %+v", c)
	}
	if _, ok := parsePathChange(`I1202 15:58:03.250117   41233 announcer.go:1] "Something else" prefix="198.18.0.1/32"`, 2026); ok {
		t.Error("another line parsed as a path change")
	}
}

func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ccm.log")
	write := func(s string) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600) //nolint:gosec // a file in the test's temporary directory
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		_ = f.Close()
	}
	write("old line\n")
	tail := logTail{path: path, off: int64(len("old line\n"))}
	write("one\ntw")
	if got, err := tail.next(); err != nil || strings.Join(got, "|") != "one" {
		t.Errorf("first read = %q, %v", got, err)
	}
	write("o\nthree\n")
	if got, err := tail.next(); err != nil || strings.Join(got, "|") != "two|three" {
		t.Errorf("second read = %q, %v", got, err)
	}
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if got := percentile(ds, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := percentile(ds, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
	if got := percentile(nil, 0.99); got != 0 {
		t.Errorf("empty p99 = %v", got)
	}
}

func TestLatencies(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	names := []string{"a", "b", "c"}
	start := []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
	for _, tc := range []struct {
		name string
		seen map[string]time.Time
		want []time.Duration
	}{
		{"all seen", map[string]time.Time{"a": t0.Add(3 * time.Second), "b": t0.Add(2 * time.Second), "c": t0.Add(4 * time.Second)},
			[]time.Duration{3 * time.Second, time.Second, 2 * time.Second}},
		{"one missing", map[string]time.Time{"a": t0.Add(time.Second), "c": t0.Add(5 * time.Second)},
			[]time.Duration{time.Second, 3 * time.Second}},
		{"none", nil, []time.Duration{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := latencies(names, start, tc.seen); !slices.Equal(got, tc.want) {
				t.Errorf("latencies = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestJoinP99Goal(t *testing.T) {
	for _, tc := range []struct {
		name         string
		p99, floor   float64
		wantMet      bool
		wantRatioTxt string
	}{
		{"under", 1.1, 1.0, true, "1.10×"},
		{"at", 1.2, 1.0, true, "1.20×"},
		{"just over", 1.217, 1.0, false, "1.22×"},
		{"over", 1.5, 1.0, false, "1.50×"},
		{"no floor", 1.0, 0, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Scenario{}
			f := s.add("p99_s", "per node, p99", tc.p99, "s").withFloor(tc.floor).ratioAtMost(joinP99Ratio, false)
			if f.Goal.Met != tc.wantMet || ratioText(f) != tc.wantRatioTxt || f.Goal.Text != "≤ 1.2× floor" {
				t.Errorf("goal %+v, ratio %q; want met %v, ratio %q", f.Goal, ratioText(f), tc.wantMet, tc.wantRatioTxt)
			}
		})
	}
}

func TestMarkdownAndCompare(t *testing.T) {
	s := &Scenario{ID: ScenarioJoin, Title: "1. Node-join storm", Size: map[string]int{"nodes": 1000}}
	s.add("all_initialized_s", "time until all initialized", 12, "s").withFloor(10).ratioAtMost(1.5, false)
	s.add("p50_s", "per node, p50", 3, "s").withFloor(2)
	s.add("p99_s", "per node, p99", 6, "s").atMost(5, "< 5 s", false)
	r := &Results{Profile: "default", CCM: "ccm", Scenarios: []*Scenario{s, {ID: ScenarioLB, Title: "2. LoadBalancer storm", Skipped: "not asked for"}}}
	md := regexp.MustCompile(` +`).ReplaceAllString(r.Markdown(), " ")
	for _, want := range []string{
		"| 1. Node-join storm (1000 nodes) | time until all initialized | 12.0 s | 10.0 s | 1.20× | ≤ 1.5× floor | **met** |",
		"| | per node, p50 | 3.00 s | 2.00 s | 1.5× | | |",
		"| | per node, p99 | 6.00 s | | | < 5 s | **missed** |",
		"skipped: not asked for",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md)
		}
	}
	b := &Results{Profile: "default", CCM: "other", Scenarios: []*Scenario{{ID: ScenarioJoin, Figures: []*Figure{{Key: "p99_s", Value: 3, Unit: "s"}}}}}
	if cmp := Compare(r, b); !strings.Contains(cmp, "|  | per node, p99 | 6.00 s | 3.00 s | 0.50 |") {
		t.Errorf("Compare:\n%s", cmp)
	}
	// A run that failed or timed out shows its reason, not blank cells.
	failed := &Results{Profile: "default", CCM: "other", Scenarios: []*Scenario{
		{ID: ScenarioJoin, Title: "1. Node-join storm", Error: "bench: timed out after 10m0s waiting for 1000 nodes\ninitialized"},
		{ID: ScenarioSteady, Title: "5. Steady state", Figures: []*Figure{{Key: "rss_mib", Name: "CCM RSS", Value: 100, Unit: "MiB"}}},
	}}
	cmp := Compare(r, failed)
	for _, want := range []string{
		"| 1. Node-join storm | (outcome) | ran | failed: bench: timed out after 10m0s waiting for 1000 nodes initialized |  |",
		"|  | time until all initialized | 12.0 s | — (failed: bench: timed out after 10m0s waiting for 1000 nodes initialized) |  |",
		"| 2. LoadBalancer storm | (outcome) | skipped: not asked for | not run |  |",
		"| 5. Steady state | (outcome) | not run | ran |  |",
		"|  | CCM RSS | — (not run) | 100.0 MiB |  |",
	} {
		if !strings.Contains(cmp, want) {
			t.Errorf("Compare lacks %q:\n%s", want, cmp)
		}
	}
}
