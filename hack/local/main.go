// Command local runs a local cluster for `make run`: etcd, kube-apiserver and
// kube-controller-manager on 127.0.0.1, the CCM with hack/local's example
// config, and a few nodes registered as kubelets with --cloud-provider=external
// would register them. As root, with --real-nodes, the nodes are real
// instead: containerd, a kubelet and kube-proxy in each node namespace of
// the router lab, with kube-scheduler, so pods run and LoadBalancer addresses
// reach them. As root, with --l2, the real nodes are on one Ethernet
// segment of the L2 lab, with no router at all: the node agents answer ARP
// and Neighbor Solicitations for the LoadBalancer addresses (l2.go).
//
//	local up [--detach | --real-nodes | --l2]   start; without --detach, run until Ctrl-C
//	local down                                  stop what `up` left running
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	cloudproviderapi "k8s.io/cloud-provider/api"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// localNode is a node of `up`: its name and kubelet --node-ip (comma
// separated, one address per family).
type localNode struct{ name, ip string }

// nodes registered by `up`: name and kubelet --node-ip.
// Their addresses are those of the router lab's node namespaces (netlab).
var nodes = []localNode{
	{"node-1", "198.18.10.11,2001:db8:10::11"},
	{"node-2", "198.18.10.12,2001:db8:10::12"},
	{"node-3", "198.18.10.13,2001:db8:10::13"},
	{"node-4", "198.18.10.14,2001:db8:10::14"}, // not in the inventory: discovered
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "local: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) < 2 {
		return errors.New("usage: local up [--detach | --real-nodes | --l2] | local down")
	}
	root := framework.RepoRoot()
	dir := filepath.Join(root, "_output", "local")
	switch os.Args[1] {
	case "up":
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		detach := fs.Bool("detach", false, "leave the cluster running and return; stop it with hack/local-down.sh")
		realNodes := fs.Bool("real-nodes", false, "as root: run real nodes (containerd, kubelet, kube-proxy) in the router lab's node namespaces instead of registering nodes")
		l2 := fs.Bool("l2", false, "as root: real nodes on one Ethernet segment with no router; the node agents announce the LoadBalancer addresses with ARP and NDP (implies --real-nodes)")
		if err := fs.Parse(os.Args[2:]); err != nil {
			return err
		}
		if *l2 {
			if *detach {
				// As with --real-nodes: the lab, the nodes' API relays
				// and the agents live in this process.
				return errors.New("--l2 runs only in the foreground (the lab, the nodes' API relay and the agents live in this process): drop --detach, stop it with Ctrl-C or hack/local-down.sh")
			}
			return upL2(root, dir)
		}
		if *realNodes && *detach {
			// The lab's namespaces and the nodes' API relay live in this
			// process: nothing would keep them once it returned.
			return errors.New("--real-nodes runs only in the foreground (the lab and the nodes' API relay live in this process): drop --detach, stop it with Ctrl-C or hack/local-down.sh")
		}
		return up(root, dir, *detach, *realNodes)
	case "down":
		return down(dir)
	default:
		return fmt.Errorf("unknown command %q: want up or down", os.Args[1])
	}
}

func pidFile(dir string) string { return filepath.Join(dir, "pids") }

// claimDir refuses to start while the pid file says a local cluster runs,
// and empties dir of the previous run's files.
func claimDir(dir string) error {
	if _, err := os.Stat(pidFile(dir)); err == nil {
		return fmt.Errorf("a local cluster is already running (%s); stop it with hack/local-down.sh", pidFile(dir))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	return nil
}

func up(root, dir string, detach, realNodes bool) error {
	if err := claimDir(dir); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cloudConfig := filepath.Join(root, "hack", "local", "cloud-config.yaml")
	var archives []string
	var pauseRef string
	if realNodes {
		// Said at once rather than after a fallback: the user asked for
		// real nodes, registered ones would not run a pod.
		if err := errors.Join(netlab.Available(), framework.RealNodesAvailable()); err != nil {
			return fmt.Errorf("--real-nodes: %w", err)
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		fmt.Println("Building the pause and echo images ...")
		var err error
		if archives, pauseRef, err = buildImages(ctx, root, dir); err != nil {
			return err
		}
	}
	var lab *netlab.Lab
	switch err := netlab.Available(); {
	case err != nil:
		fmt.Printf("No BGP router: %v. LoadBalancer Services get addresses, nothing announces them.\n", err)
	case detach:
		fmt.Println("No BGP router: it runs only in the foreground (make run, as root).")
	default:
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
		// netlab.Start waits for the machine-wide lab lock: say so, or a
		// test's lab would look like a hang.
		fmt.Println("Starting a BIRD router, 4 node namespaces and a client namespace (waits while another lab, e.g. a test's, exists) ...")
		if lab, cloudConfig, err = startRouter(dir, cloudConfig); err != nil {
			return err
		}
	}

	if realNodes {
		fmt.Println("Starting etcd, kube-apiserver, kube-controller-manager (every controller) and kube-scheduler on 127.0.0.1 ...")
	} else {
		fmt.Println("Starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 ...")
	}
	cp, err := framework.StartControlPlane(ctx, framework.Options{Dir: dir, Detach: detach, KCM: true, RealNodes: realNodes})
	if err != nil {
		if lab != nil {
			_ = lab.Close()
		}
		return err
	}
	var procs []*framework.Process
	var realNodeList []*framework.RealNode
	cleanup := func() {
		// Nodes first: their kubelets and pods, then the control plane
		// and the lab their namespaces are in.
		stopRealNodes(dir, realNodeList)
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(5 * time.Second)
		}
		cp.Stop()
		if lab != nil {
			if err := lab.Close(); err != nil {
				fmt.Printf("router lab: %v\n", err)
			}
		}
		_ = os.Remove(pidFile(dir))
	}
	ccm, err := cp.StartCCM(ctx, framework.CCMOptions{
		Name: "metal-cloud-controller-manager", Detach: detach, CloudConfig: cloudConfig,
		// The product's default: the nodes' kube-proxy is checked (the
		// registered nodes have none and stay announced: fail open).
		HealthChecks: true,
		// kube-controller-manager allocates the nodes' pod CIDRs from this
		// range; with a router, the route controller announces them.
		Args: []string{"--cluster-cidr", framework.DefaultClusterCIDR},
		// As in the chart's pod: it publishes its BGP sessions for
		// `kubectl metal-ccm status`.
		Env: []string{"POD_NAMESPACE=" + metav1.NamespaceSystem, "POD_NAME=" + localReplica},
	})
	if err != nil {
		cleanup()
		return err
	}
	procs = append(procs, ccm.Process)
	if err := writePIDs(dir, detach, append(cp.Processes(), procs...)); err != nil {
		cleanup()
		return err
	}
	fmt.Printf("Started metal-cloud-controller-manager (pid %d), log %s\n", ccm.PID(), ccm.LogPath)

	cs, err := cp.Client()
	if err != nil {
		cleanup()
		return err
	}
	// Where the chart puts it, for `kubectl metal-ccm status` (the
	// replica reads its file).
	if err := framework.CreateCloudConfigMap(ctx, cs, metav1.NamespaceSystem, cloudConfig); err != nil {
		cleanup()
		return err
	}
	var readyAt *readyTimes
	if realNodes {
		readyAt = watchReady(ctx, cs, len(nodes))
		realNodeList, err = startRealNodes(ctx, cp, lab, archives, pauseRef)
	} else {
		err = registerNodes(ctx, cs)
	}
	if err != nil {
		cleanup()
		return err
	}
	if _, err := waitNodes(ctx, cs, len(nodes), readyAt); err != nil {
		cleanup()
		return err
	}
	if realNodes {
		printRealNodeUsage(realNodeList, readyAt)
	}
	fmt.Printf("\nKubeconfig: %s\n  export KUBECONFIG=%s\n  %s get nodes -L topology.kubernetes.io/zone,node.kubernetes.io/instance-type\n",
		cp.AdminKubeconfig, cp.AdminKubeconfig, filepath.Join(framework.BinDir(), "kubectl"))
	fmt.Printf("Logs: %s\n", filepath.Join(dir, "logs"))
	if realNodes {
		fmt.Printf("\nBGP router: namespace %s (birdc -s %s show route)\n", lab.Router, lab.BirdSocket())
		printRealNodeHelp(lab, cp.AdminKubeconfig, realNodeList)
	} else if _, err := demoService(ctx, cs, demoSpec()); err != nil {
		cleanup()
		return err
	}
	// With real nodes kube-proxy serves the addresses; serveVIPs' loopback
	// addresses would take its traffic.
	if lab != nil && !realNodes {
		go serveVIPs(ctx, lab, cs)
		fmt.Printf("\nBGP router: namespace %s (birdc -s %s show route)\n", lab.Router, lab.BirdSocket())
		fmt.Printf("Client: namespace %s. Try:\n  ip netns exec %s curl http://<EXTERNAL-IP>/\n  ip -n %s route show proto bird\n",
			lab.Client, lab.Client, lab.Router)
	}
	if detach {
		fmt.Println("\nDetached. Stop it with hack/local-down.sh.")
		return nil
	}
	fmt.Println("\nRunning. Press Ctrl-C to stop and clean up.")
	select {
	case <-ctx.Done():
	case <-ccm.Done():
		fmt.Printf("metal-cloud-controller-manager exited; its log ends with:\n%s\n", lastLines(ccm.Log(), 20))
	}
	fmt.Println("Stopping ...")
	cleanup()
	fmt.Println("Stopped.")
	return nil
}

func registerNodes(ctx context.Context, cs kubernetes.Interface) error {
	for _, n := range nodes {
		if _, err := framework.RegisterNode(ctx, cs, n.name, true, strings.Split(n.ip, ",")...); err != nil {
			return err
		}
		fmt.Printf("Registered node %s (kubelet --node-ip=%s) with taint %s\n", n.name, n.ip, cloudproviderapi.TaintExternalCloudProvider)
	}
	return nil
}

// waitNodes waits until want nodes exist and the CCM has initialized them,
// prints them and returns them. With real nodes (readyAt, which it keeps up
// to date) it also waits until they are Ready and without the not-ready
// taint (pods are scheduled onto them then); they register themselves, so it
// also waits for them to appear.
func waitNodes(ctx context.Context, cs kubernetes.Interface, want int, readyAt *readyTimes) ([]v1.Node, error) {
	ready := readyAt != nil
	if ready {
		fmt.Println("\nWaiting for the kubelets to register, the CCM to initialize the nodes and them to turn Ready ...")
	} else {
		fmt.Println("\nWaiting for the CCM to initialize them ...")
	}
	var got []v1.Node
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		readyAt.record(list.Items)
		if len(list.Items) < want {
			return false, nil
		}
		for i := range list.Items {
			if ready && !nodeReady(&list.Items[i]) {
				return false, nil
			}
			for _, t := range list.Items[i].Spec.Taints {
				if t.Key == cloudproviderapi.TaintExternalCloudProvider || (ready && t.Key == v1.TaintNodeNotReady) {
					return false, nil
				}
			}
		}
		got = list.Items
		fmt.Printf("%-8s %-30s %-10s %-12s %s\n", "NODE", "PROVIDER ID", "REGION", "ZONE", "INSTANCE TYPE")
		for _, n := range list.Items {
			fmt.Printf("%-8s %-30s %-10s %-12s %s\n", n.Name, n.Spec.ProviderID, n.Labels["topology.kubernetes.io/region"],
				n.Labels["topology.kubernetes.io/zone"], n.Labels["node.kubernetes.io/instance-type"])
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the nodes: %w", err)
	}
	return got, nil
}

// demoSpec is the spec of the demo Service of registered nodes: a
// LoadBalancer on port 80 whose selector no pod matches (serveVIPs answers
// for it in the router lab's node namespaces).
func demoSpec() v1.ServiceSpec {
	return v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "demo"},
		Ports: []v1.ServicePort{{Name: "http", Port: 80}}}
}

// demoService creates the LoadBalancer Service default/demo with spec,
// waits until it has an address of each of its IP families, prints them and
// returns them.
func demoService(ctx context.Context, cs kubernetes.Interface, spec v1.ServiceSpec) ([]string, error) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"}, Spec: spec}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create demo Service: %w", err)
	}
	var ips []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, "demo", metav1.GetOptions{})
		// The API server fills spec.ipFamilies in; a dual-stack Service
		// has an address of each family once the CCM allocated both.
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 || len(s.Status.LoadBalancer.Ingress) < len(s.Spec.IPFamilies) {
			return false, nil //nolint:nilerr // keep polling
		}
		ips = ips[:0]
		for _, in := range s.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
		}
		fmt.Printf("\nLoadBalancer Service default/demo got EXTERNAL-IP %s\n", strings.Join(ips, ","))
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for the demo Service's addresses: %w", err)
	}
	return ips, nil
}

// foregroundName marks, in the pid file, the `up` process that runs in the
// foreground: `down` asks it to stop (SIGTERM), and it stops the rest
// itself, real nodes and the router lab included, which no PID list covers
// (mounts, cgroups, namespaces).
const foregroundName = "metal-local"

// writePIDs records the processes `down` stops, the foreground `up` itself
// first (unless detached).
func writePIDs(dir string, detach bool, ps []*framework.Process) error {
	var b strings.Builder
	if !detach {
		fmt.Fprintf(&b, "%d %s\n", os.Getpid(), foregroundName)
	}
	for _, p := range ps {
		fmt.Fprintf(&b, "%d %s\n", p.PID(), p.Name)
	}
	if err := os.WriteFile(pidFile(dir), []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

func down(dir string) error {
	data, err := os.ReadFile(pidFile(dir))
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("No local cluster is running.")
		return nil
	}
	if err != nil {
		return fmt.Errorf("read pid file: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if stopForeground(lines) {
		return nil
	}
	for i := len(lines) - 1; i >= 0; i-- {
		fields := strings.Fields(lines[i])
		if len(fields) < 2 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || fields[1] == foregroundName {
			continue
		}
		fmt.Printf("Stopping %s (pid %d)\n", fields[1], pid)
		framework.StopPID(pid, 5*time.Second)
	}
	// A foreground `up` that was stopped above may have removed it.
	if err := os.Remove(pidFile(dir)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove pid file: %w", err)
	}
	return nil
}

// foregroundStopTimeout bounds how long a foreground `up` may take to clean
// up after SIGTERM: each real node's kubelet and containerd get up to 10 s.
const foregroundStopTimeout = 2 * time.Minute

// stopForeground stops the foreground `up` named in the pid file, if any,
// with SIGTERM (to that PID only: it is not a process-group leader, it runs
// in the shell's group), and reports whether it exited and so cleaned up
// after itself. If it does not exit in time it is killed; its children die
// with it (Pdeathsig), and the caller still stops the recorded PIDs.
func stopForeground(lines []string) bool {
	for _, l := range lines {
		fields := strings.Fields(l)
		if len(fields) < 2 || fields[1] != foregroundName {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil || pid <= 1 {
			return false
		}
		// The PID may have been reused since a crashed `up` wrote it. A
		// rebuild (hack/build.sh) while it runs leaves "metal-local (deleted)".
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil || strings.TrimSuffix(filepath.Base(exe), " (deleted)") != foregroundName {
			return false // gone without cleaning up: stop what it recorded
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); errors.Is(err, syscall.ESRCH) {
			return false
		}
		fmt.Printf("Asked %s (pid %d), running in the foreground, to stop and clean up ...\n", foregroundName, pid)
		deadline := time.Now().Add(foregroundStopTimeout)
		for time.Now().Before(deadline) {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				fmt.Printf("%s (pid %d) stopped.\n", foregroundName, pid)
				return true
			}
			time.Sleep(200 * time.Millisecond)
		}
		fmt.Printf("%s (pid %d) did not stop within %s: killing it\n", foregroundName, pid, foregroundStopTimeout)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return false
	}
	return false
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// localReplica is the name the local replica goes by, as a pod's.
const localReplica = "metal-cloud-controller-manager-0"
