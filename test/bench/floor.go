package bench

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// The floors of the two storms are measured before the CCM starts: a
// trivial controller, the floor's client with the CCM's limits, does the one
// write each item needs (a node's taint removed, a Service's address set) as
// the harness registers or creates the items exactly as in the storm. The
// storm's figure and its floor then share the harness's load and the watch
// that times them; the floor is what the API server allows.
type floors struct {
	join, lb time.Duration
	// joinP50 and joinP99 are the floor's per-node latencies, from the
	// start of a node's registration to the watch event that shows its
	// taint gone: what the storm's per-node figures are judged against.
	joinP50, joinP99 time.Duration
	// joinCreate and lbCreate are how long the harness took to register
	// or create the items during the floor.
	joinCreate, lbCreate time.Duration
}

// floorNamespace holds the LoadBalancer floor's Services, deleted after.
const floorNamespace = "bench-floor"

// measureFloors measures the floors of the storms that will run.
func (e *env) measureFloors(ctx context.Context) error {
	if e.o.runs(ScenarioJoin) {
		names, ips := nodeSet("floor", joinNodeBase, e.o.JoinNodes)
		e.log.Info("Floor of the node-join storm", "nodes", len(names))
		fr, err := e.floorStorm(ctx, len(names),
			func(ctx context.Context, i int) error {
				_, err := framework.RegisterNode(ctx, e.cs, names[i], true, ips[i].String())
				return err
			},
			func(ctx context.Context, i int) error {
				return patchOnce(ctx, e.floorCS, kindNode, names[i], []byte(`{"spec":{"taints":null}}`))
			},
			func() (time.Time, int) { t := e.w.initTimes(names); return latest(t), len(t) })
		if err != nil {
			return err
		}
		e.floors.join, e.floors.joinCreate = fr.total, fr.creating
		lat := latencies(names, fr.began, e.w.initTimes(names))
		e.floors.joinP50, e.floors.joinP99 = percentile(lat, 0.50), percentile(lat, 0.99)
		if err := e.deleteNodes(ctx, names); err != nil {
			return err
		}
	}
	if e.o.runs(ScenarioLB) {
		keys := serviceKeys(floorNamespace, "floor", e.o.LBServices)
		if err := framework.EnsureNamespace(ctx, e.cs, floorNamespace); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		e.log.Info("Floor of the LoadBalancer storm", "services", len(keys))
		_, ips := nodeSet("", netip.MustParsePrefix(lbPool).Addr(), len(keys))
		fr, err := e.floorStorm(ctx, len(keys),
			func(ctx context.Context, i int) error { return e.createService(ctx, keys[i], false) },
			func(ctx context.Context, i int) error {
				ns, name := splitKey(keys[i])
				patch := fmt.Appendf(nil, `{"status":{"loadBalancer":{"ingress":[{"ip":%q}]}}}`, ips[i])
				_, err := e.floorCS.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
				return err
			},
			func() (time.Time, int) { t, _ := e.w.ipTimes(keys); return latest(t), len(t) })
		if err != nil {
			return err
		}
		e.floors.lb, e.floors.lbCreate = fr.total, fr.creating
		// Gone before the CCM starts: it would take them for its own.
		if err := e.deleteServices(ctx, keys); err != nil {
			return err
		}
	}
	return nil
}

// floorRun is what one floor storm took.
type floorRun struct {
	// total runs from the start to the last write, as the watch saw it;
	// creating is how long the creations took.
	total, creating time.Duration
	// began is when the creation of each item started, by index.
	began []time.Time
}

// floorStorm creates n items with the harness's client (create), and, as
// each is created, writes it once with the floor's client (write), Workers
// at a time. It returns the time from the start to the last write, as the
// watch saw it (seen: the latest time and how many were seen), the time the
// creations took and when each creation started.
func (e *env) floorStorm(ctx context.Context, n int, create, write func(context.Context, int) error,
	seen func() (time.Time, int)) (fr floorRun, err error) {
	created := make(chan int, n)
	start := time.Now()
	fr.began = make([]time.Time, n)
	errc := make(chan error, 1)
	go func() {
		defer close(created)
		err := parallel(ctx, n, harnessWorkers, func(ctx context.Context, i int) error {
			fr.began[i] = time.Now()
			if err := create(ctx, i); err != nil {
				return err
			}
			created <- i
			return nil
		})
		fr.creating = time.Since(start) // read after errc's receive
		errc <- err
	}()
	err = parallel(ctx, n, e.o.Workers, func(ctx context.Context, _ int) error {
		i, ok := <-created
		if !ok {
			return nil
		}
		return write(ctx, i)
	})
	if cerr := <-errc; cerr != nil {
		return fr, fmt.Errorf("bench: floor: %w", cerr)
	}
	if err != nil {
		return fr, fmt.Errorf("bench: floor: %w", err)
	}
	var last time.Time
	if err := e.waitFor(ctx, "the floor's writes", func() (bool, string) {
		var got int
		last, got = seen()
		return got == n, fmt.Sprintf("%d of %d writes seen", got, n)
	}); err != nil {
		return fr, err
	}
	fr.total = last.Sub(start)
	return fr, nil
}

// object kinds the label floor writes to.
const (
	kindNode  = "node"
	kindSvc   = "service"
	kindSlice = "endpointslice"
)

// labelFloor is the time the floor's client (the CCM's QPS, burst and
// workers) takes to write once to each object: a merge patch of one label, a
// real write with a watch event, that no controller acts on.
func (e *env) labelFloor(ctx context.Context, kind string, keys []string) (time.Duration, error) {
	e.floorSeq++
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{"bench.metal-ccm.io/floor":"f%d"}}}`, e.floorSeq)
	start := time.Now()
	err := parallel(ctx, len(keys), e.o.Workers, func(ctx context.Context, i int) error {
		return patchOnce(ctx, e.floorCS, kind, keys[i], patch)
	})
	if err != nil {
		return 0, fmt.Errorf("bench: floor: %w", err)
	}
	return time.Since(start), nil
}

func patchOnce(ctx context.Context, cs kubernetes.Interface, kind, key string, patch []byte) error {
	ns, name := splitKey(key)
	var err error
	switch kind {
	case kindNode:
		_, err = cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	case kindSvc:
		_, err = cs.CoreV1().Services(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	case kindSlice:
		_, err = cs.DiscoveryV1().EndpointSlices(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	default:
		err = fmt.Errorf("unknown kind %q", kind)
	}
	if err != nil {
		return fmt.Errorf("patch %s %s: %w", kind, key, err)
	}
	return nil
}
