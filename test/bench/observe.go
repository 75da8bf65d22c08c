package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// sample is what the harness reads of the CCM, the API server and the
// router at one moment; two samples make a delta.
type sample struct {
	at time.Time
	// From the CCM's /metrics.
	requests, writes, lbSyncs float64
	// From /proc.
	ccm, apiserver, etcd framework.ProcStat
	// The CCM log's size, where its lines of later events begin.
	logOffset int64
	// From the router (0 without one): paths received and withdrawn.
	bgpUpdates, bgpWithdraws float64
	// From the API server's /metrics: LIST requests it served, by resource.
	apiLists map[string]float64
}

// delta is what happened between two samples.
type delta struct {
	wall                      time.Duration
	requests, writes, lbSyncs float64
	ccmCPU, apiCPU, etcdCPU   time.Duration
	bgpUpdates, bgpWithdraws  float64
	apiLists                  map[string]float64 // by resource, only those with some
}

// metricsTries bounds the attempts to read the CCM's /metrics: a CCM busy
// at full CPU may not answer within the framework's two-second timeout.
const metricsTries = 10

func (e *env) sample(ctx context.Context) (sample, error) {
	text, err := e.ccmMetrics(ctx)
	if err != nil {
		return sample{}, err
	}
	s := sample{at: time.Now()}
	s.requests = promSum(text, "rest_client_requests_total", nil)
	s.writes = promSum(text, "rest_client_requests_total", func(labels string) bool {
		for _, m := range []string{"POST", "PUT", "PATCH", "DELETE"} {
			if strings.Contains(labels, `method="`+m+`"`) {
				return true
			}
		}
		return false
	})
	// Service syncs a node change causes: upstream's service controller
	// counts its UpdateLoadBalancer calls, ours (pkg/lbcontroller) every sync.
	s.lbSyncs = promSum(text, "service_controller_loadbalancer_sync_total", nil) + promSum(text, "metal_ccm_service_syncs_total", nil)
	for _, p := range []struct {
		proc *framework.Process
		out  *framework.ProcStat
	}{{e.ccm.Process, &s.ccm}, {e.cp.APIServer, &s.apiserver}, {e.cp.Etcd, &s.etcd}} {
		if *p.out, err = framework.ReadProcStat(p.proc.PID()); err != nil {
			return s, fmt.Errorf("bench: %w", err)
		}
	}
	if fi, err := os.Stat(e.ccm.LogPath); err == nil {
		s.logOffset = fi.Size()
	}
	if e.lab != nil {
		if s.bgpUpdates, s.bgpWithdraws, err = e.birdStats(); err != nil {
			return s, err
		}
	}
	raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/metrics").SetHeader("Accept", "text/plain").DoRaw(ctx)
	if err != nil {
		return s, fmt.Errorf("bench: API server metrics: %w", err)
	}
	s.apiLists = map[string]float64{}
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `verb="LIST"`) {
			continue
		}
		s.apiLists[labelValue(line, "resource")] += promSum(line, "apiserver_request_total", nil)
	}
	return s, nil
}

// ccmMetrics reads the CCM's /metrics, trying again while it times out.
func (e *env) ccmMetrics(ctx context.Context) (string, error) {
	var err error
	for range metricsTries {
		var text string
		if text, err = e.cp.Metrics(ctx, e.ccm); err == nil {
			return text, nil
		}
		if aerr := e.ccmAlive(); aerr != nil {
			return "", aerr
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("bench: %w", ctx.Err())
		case <-time.After(time.Second):
		}
	}
	return "", fmt.Errorf("bench: %d tries: %w", metricsTries, err)
}

func (a sample) to(b sample) delta {
	d := delta{
		wall:     b.at.Sub(a.at),
		requests: b.requests - a.requests, writes: b.writes - a.writes, lbSyncs: b.lbSyncs - a.lbSyncs,
		ccmCPU: b.ccm.CPU - a.ccm.CPU, apiCPU: b.apiserver.CPU - a.apiserver.CPU, etcdCPU: b.etcd.CPU - a.etcd.CPU,
		bgpUpdates: b.bgpUpdates - a.bgpUpdates, bgpWithdraws: b.bgpWithdraws - a.bgpWithdraws,
		apiLists: map[string]float64{},
	}
	for r, n := range b.apiLists {
		if n > a.apiLists[r] {
			d.apiLists[r] = n - a.apiLists[r]
		}
	}
	return d
}

// listCount is the number of LIST requests of a delta.
func (d delta) listCount() float64 {
	var n float64
	for _, v := range d.apiLists {
		n += v
	}
	return n
}

// labelValue is the value of a label in a Prometheus sample line.
func labelValue(line, label string) string {
	_, rest, ok := strings.Cut(line, label+`="`)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// promSum sums the samples of the named metric in Prometheus text whose
// label set (the text between the braces) keep accepts; nil keeps all.
func promSum(text, name string, keep func(labels string) bool) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		labels := ""
		if rest[0] == '{' {
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels, rest = rest[1:end], rest[end+1:]
		}
		if keep != nil && !keep(labels) {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(fields[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// settleMax bounds settle.
const settleMax = 30 * time.Second

// statusDrainMax bounds the wait for the leader's Service status writes
// after Services were created (serviceStatus.writesPerSecond, 20 by
// default: 10,000 new Services take about 500 s).
const statusDrainMax = 15 * time.Minute

// settle waits until the CCM writes at most once a second (its lease
// renewals), so that the Events and retries a scenario causes are counted
// with it and do not load the next step. It returns the last sample.
func (e *env) settle(ctx context.Context) (sample, error) {
	return e.settleWithin(ctx, settleMax)
}

// settleWithin is settle, giving up after settleMax.
func (e *env) settleWithin(ctx context.Context, settleMax time.Duration) (sample, error) {
	prev, err := e.sample(ctx)
	if err != nil {
		return prev, err
	}
	deadline := time.Now().Add(settleMax)
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return prev, fmt.Errorf("bench: settle: %w", ctx.Err())
		case <-time.After(time.Second):
		}
		cur, err := e.sample(ctx)
		if err != nil {
			return cur, err
		}
		if cur.writes-prev.writes <= 1 {
			return cur, nil
		}
		prev = cur
	}
	e.log.Info("The CCM still writes; going on", "after", settleMax)
	return prev, nil
}

// cpuFigures adds the CPU the CCM, kube-apiserver and etcd used over d.
func cpuFigures(s *Scenario, d delta) {
	s.add("ccm_cpu_s", "CCM CPU time", d.ccmCPU.Seconds(), "s")
	s.add("apiserver_cpu_s", "kube-apiserver + etcd CPU time", (d.apiCPU + d.etcdCPU).Seconds(), "s")
}

// debugClient fetches the CCM's /debug/pprof (a self-signed certificate on
// loopback).
var debugClient = &http.Client{Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the CCM's self-signed serving cert on loopback
}}

// profileCPU fetches a CPU profile of the CCM over the next seconds into
// PprofDir/name.cpu.pb.gz, when PprofDir is set; the returned func waits for
// it.
func (e *env) profileCPU(ctx context.Context, name string, seconds int) func() {
	if e.o.PprofDir == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, seconds))
		if err := e.fetchDebug(ctx, path, name+".cpu.pb.gz"); err != nil {
			e.log.Error(err, "CPU profile", "name", name)
		}
	}()
	return func() { <-done }
}

// fetchDebug saves a /debug/pprof path of the CCM as PprofDir/file.
func (e *env) fetchDebug(ctx context.Context, path, file string) error {
	if err := os.MkdirAll(e.o.PprofDir, 0o750); err != nil {
		return fmt.Errorf("bench: pprof: %w", err)
	}
	url := strings.TrimSuffix(e.ccm.HealthzURL, "/healthz") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("bench: pprof: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err := debugClient.Do(req)
	if err != nil {
		return fmt.Errorf("bench: pprof: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("bench: pprof %s: %s: %s", path, resp.Status, body)
	}
	f, err := os.Create(filepath.Join(e.o.PprofDir, file)) //nolint:gosec // under the output directory
	if err != nil {
		return fmt.Errorf("bench: pprof: %w", err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench: pprof: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("bench: pprof: %w", err)
	}
	return nil
}
