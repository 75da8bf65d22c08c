package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// buildImages builds the pause image (the nodes' sandbox image) and the echo
// image into dir/images: the archives every node's containerd imports, and
// the pause image's reference. No registry is involved, so pods must use
// imagePullPolicy Never.
func buildImages(ctx context.Context, root, dir string) (archives []string, pauseRef string, err error) {
	out := filepath.Join(dir, "images")
	if err := os.MkdirAll(out, 0o750); err != nil {
		return nil, "", fmt.Errorf("create %s: %w", out, err)
	}
	for _, o := range []images.Options{images.Pause(filepath.Join(out, "pause.tar")), images.Echo(filepath.Join(out, "echo.tar"))} {
		// The packages are import paths of this module: go build must run
		// inside it, whatever the caller's working directory.
		o.Dir = root
		res, err := images.Build(ctx, o)
		if err != nil {
			return nil, "", err
		}
		archives = append(archives, res.Path)
		if pauseRef == "" {
			pauseRef = res.Ref
		}
	}
	return archives, pauseRef, nil
}

// startRealNodes starts a real node (containerd, kubelet
// --cloud-provider=external, kube-proxy) in each of the lab's node
// namespaces, named and addressed as the registered nodes would be, so the
// example cloud-config matches them the same way. Pod CIDRs are left to
// kube-controller-manager's allocator, as on a kubeadm cluster. On error the
// nodes started so far are returned for the caller to stop.
func startRealNodes(ctx context.Context, cp *framework.ControlPlane, lab *netlab.Lab, archives []string, pauseRef string) ([]*framework.RealNode, error) {
	for i, n := range nodes {
		// The names and addresses above are also the example config's
		// inventory; a lab that numbered its nodes differently would leave
		// the kubelets' --node-ip on no interface.
		if ip, want := strings.Split(n.ip, ",")[0], lab.NodeAddrs(netlab.IPv4)[i].String(); ip != want {
			return nil, fmt.Errorf("node %s: address %s, but lab node %d has %s", n.name, ip, i, want)
		}
	}
	return launchRealNodes(ctx, cp, nodes, lab.Nodes, archives, pauseRef)
}

// launchRealNodes starts real node list[i] in network namespace netns[i],
// one after another, and points the kubernetes Service at the first one's
// API relay. On error the nodes started so far are returned for the caller
// to stop.
func launchRealNodes(ctx context.Context, cp *framework.ControlPlane, list []localNode, netns []string, archives []string, pauseRef string) ([]*framework.RealNode, error) {
	var started []*framework.RealNode
	for i, n := range list {
		node, err := cp.LaunchRealNode(ctx, framework.RealNodeOptions{
			Name: n.name, NetNS: netns[i], NodeIPs: strings.Split(n.ip, ","), Images: archives, SandboxImage: pauseRef,
		})
		if err != nil {
			if node != nil {
				err = fmt.Errorf("%w (its logs: %s)", err, filepath.Join(node.Dir, "logs"))
			}
			return started, err
		}
		started = append(started, node)
		fmt.Printf("Started real node %s in %s (kubelet --node-ip=%s), files in %s\n", n.name, netns[i], n.ip, node.Dir)
	}
	// Pods that use in-cluster configuration reach the API server through
	// the kubernetes Service; the API server listens on the host's
	// loopback and publishes no endpoints itself.
	if err := cp.ServeKubernetesService(ctx, started[0]); err != nil {
		return started, err
	}
	return started, nil
}

// readyTimes records when each node was first seen Ready. It watches from
// before the first node starts: the nodes start one after another, and a
// wait that began after the last one would date the first ones' Ready late.
type readyTimes struct {
	want int // how many nodes to see Ready
	mu   sync.Mutex
	at   map[string]time.Time
}

// watchReady polls the nodes every 100 ms until want nodes have been seen
// Ready, or ctx ends.
func watchReady(ctx context.Context, cs kubernetes.Interface, want int) *readyTimes {
	r := &readyTimes{want: want, at: map[string]time.Time{}}
	go func() {
		for ctx.Err() == nil {
			if list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil && r.record(list.Items) {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return r
}

// record notes the nodes first seen Ready in list, and reports whether
// r.want nodes have been. waitNodes records too: its last poll may
// see a node Ready before this watch does.
func (r *readyTimes) record(list []v1.Node) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range list {
		if _, seen := r.at[list[i].Name]; !seen && nodeReady(&list[i]) {
			r.at[list[i].Name] = time.Now()
		}
	}
	return len(r.at) >= r.want
}

func (r *readyTimes) get(name string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.at[name]
	return t, ok
}

// nodeReady reports whether the node's Ready condition is True.
func nodeReady(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// printRealNodeUsage prints how long each node took from its start to
// Ready (as first seen by watchReady) and what it costs so far, measured on its
// own processes (containerd, kubelet, kube-proxy and the shims; not the
// pods).
func printRealNodeUsage(rn []*framework.RealNode, readyAt *readyTimes) {
	fmt.Printf("\n%-8s %-12s %-9s %s\n", "NODE", "READY AFTER", "RSS", "CPU SO FAR")
	for _, n := range rn {
		ready := "-"
		if t, ok := readyAt.get(n.Name); ok {
			ready = t.Sub(n.Started).Round(100 * time.Millisecond).String()
		}
		u, err := n.Usage()
		if err != nil {
			fmt.Printf("%-8s %-12s usage: %v\n", n.Name, ready, err)
			continue
		}
		fmt.Printf("%-8s %-12s %-9s %s\n", n.Name, ready, fmt.Sprintf("%d MiB", u.RSS>>20), u.CPU.Round(10*time.Millisecond))
	}
}

// stopRealNodes stops the nodes, last first, and keeps each one's logs in
// dir/logs/NAME (the node's own folder is temporary: its path must be short
// for containerd's socket). A node's folder is removed only when it stopped
// cleanly: after a failed stop something may still be mounted under it.
func stopRealNodes(dir string, rn []*framework.RealNode) {
	for i := len(rn) - 1; i >= 0; i-- {
		n := rn[i]
		fmt.Printf("Stopping real node %s\n", n.Name)
		err := n.Stop()
		keep := filepath.Join(dir, "logs", n.Name)
		if cerr := copyLogs(filepath.Join(n.Dir, "logs"), keep); cerr != nil {
			fmt.Printf("real node %s: keep logs: %v\n", n.Name, cerr)
		}
		if err != nil {
			fmt.Printf("real node %s: %v; its files stay in %s\n", n.Name, err, n.Dir)
			continue
		}
		if err := os.RemoveAll(n.Dir); err != nil {
			fmt.Printf("real node %s: %v\n", n.Name, err)
		}
	}
	if len(rn) > 0 {
		fmt.Printf("The real nodes' logs are kept in %s\n", filepath.Join(dir, "logs", "NODE"))
	}
}

// copyLogs copies the *.log files of from into to.
func copyLogs(from, to string) error {
	logs, err := filepath.Glob(filepath.Join(from, "*.log"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o750); err != nil {
		return err
	}
	var errs []error
	for _, l := range logs {
		errs = append(errs, copyFile(l, filepath.Join(to, filepath.Base(l))))
	}
	return errors.Join(errs...)
}

func copyFile(from, to string) error {
	in, err := os.Open(from) //nolint:gosec // a log of a node this process started
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) //nolint:gosec // under the local cluster's folder
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// printRealNodeHelp says how to run a pod and reach it through a
// LoadBalancer address from the lab's client namespace.
func printRealNodeHelp(lab *netlab.Lab, kubeconfig string, rn []*framework.RealNode) {
	kubectl := filepath.Join(framework.BinDir(), "kubectl")
	fmt.Printf(`
Real nodes: containerd, kubelet and kube-proxy in each node namespace. The
images %s and %s
are on every node already (no registry: use --image-pull-policy=Never). Try:
  export KUBECONFIG=%s
  %s run echo --image=%s --image-pull-policy=Never --port 8080
  %s expose pod echo --type=LoadBalancer --port 80 --target-port 8080
  %s get service echo        # EXTERNAL-IP from the pool, announced to the router
  ip netns exec %s curl -s http://<EXTERNAL-IP>/
Its answer has empty "pod" and "node": kubectl run cannot set the Downward API
variables it reads. hack/local/manifests/echo.yaml can, one pod per node:
  %s apply -f %s
  %s expose deployment echo --name echo-all --type=LoadBalancer --port 80 --target-port 8080
Debug a node (%s here; each node's folder is printed above): its logs in
%s, pod logs in %s, and
  ctr --address %s -n k8s.io containers ls
  nsenter --net=/run/netns/%s nft list table ip kube-proxy
`, images.Ref("pause"), images.Ref("echo"), kubeconfig, kubectl, images.Ref("echo"), kubectl, kubectl, lab.Client,
		kubectl, filepath.Join(framework.RepoRoot(), "hack", "local", "manifests", "echo.yaml"), kubectl,
		rn[0].Name, filepath.Join(rn[0].Dir, "logs"), rn[0].PodLogsDir(), filepath.Join(rn[0].Dir, "containerd.sock"), rn[0].NetNS)
}
