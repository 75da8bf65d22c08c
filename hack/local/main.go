// Command local runs a local cluster for `make run`: etcd, kube-apiserver and
// kube-controller-manager on 127.0.0.1, the CCM with hack/local's example
// config, and a few nodes registered as kubelets with --cloud-provider=external
// would register them.
//
//	local up [--detach]   start; without --detach, run until Ctrl-C
//	local down            stop what a detached `up` left running
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

// nodes registered by `up`: name and kubelet --node-ip.
// Their addresses are those of the router lab's node namespaces (netlab).
var nodes = []struct{ name, ip string }{
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
		return errors.New("usage: local up [--detach] | local down")
	}
	root := framework.RepoRoot()
	dir := filepath.Join(root, "_output", "local")
	switch os.Args[1] {
	case "up":
		fs := flag.NewFlagSet("up", flag.ContinueOnError)
		detach := fs.Bool("detach", false, "leave the cluster running and return; stop it with hack/local-down.sh")
		if err := fs.Parse(os.Args[2:]); err != nil {
			return err
		}
		return up(root, dir, *detach)
	case "down":
		return down(dir)
	default:
		return fmt.Errorf("unknown command %q: want up or down", os.Args[1])
	}
}

func pidFile(dir string) string { return filepath.Join(dir, "pids") }

func up(root, dir string, detach bool) error {
	if _, err := os.Stat(pidFile(dir)); err == nil {
		return fmt.Errorf("a local cluster is already running (%s); stop it with hack/local-down.sh", pidFile(dir))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clean %s: %w", dir, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	cloudConfig := filepath.Join(root, "hack", "local", "cloud-config.yaml")
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
		fmt.Println("Starting a BIRD router, 4 node namespaces and a client namespace ...")
		if lab, cloudConfig, err = startRouter(dir, cloudConfig); err != nil {
			return err
		}
	}

	fmt.Println("Starting etcd, kube-apiserver and kube-controller-manager on 127.0.0.1 ...")
	cp, err := framework.StartControlPlane(ctx, framework.Options{Dir: dir, Detach: detach, KCM: true})
	if err != nil {
		if lab != nil {
			_ = lab.Close()
		}
		return err
	}
	var procs []*framework.Process
	cleanup := func() {
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
		// kube-controller-manager allocates the nodes' pod CIDRs from this
		// range; with a router, the route controller announces them.
		Args: []string{"--cluster-cidr", framework.DefaultClusterCIDR},
	})
	if err != nil {
		cleanup()
		return err
	}
	procs = append(procs, ccm.Process)
	if err := writePIDs(dir, append(cp.Processes(), procs...)); err != nil {
		cleanup()
		return err
	}
	fmt.Printf("Started metal-cloud-controller-manager (pid %d), log %s\n", ccm.PID(), ccm.LogPath)

	cs, err := cp.Client()
	if err != nil {
		cleanup()
		return err
	}
	if err := registerNodes(ctx, cs); err != nil {
		cleanup()
		return err
	}
	fmt.Printf("\nKubeconfig: %s\n  export KUBECONFIG=%s\n  %s get nodes -L topology.kubernetes.io/zone,node.kubernetes.io/instance-type\n",
		cp.AdminKubeconfig, cp.AdminKubeconfig, filepath.Join(framework.BinDir(), "kubectl"))
	fmt.Printf("Logs: %s\n", filepath.Join(dir, "logs"))
	if err := demoService(ctx, cs); err != nil {
		cleanup()
		return err
	}
	if lab != nil {
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
	fmt.Println("\nWaiting for the CCM to initialize them ...")
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling
		}
		for i := range list.Items {
			for _, t := range list.Items[i].Spec.Taints {
				if t.Key == cloudproviderapi.TaintExternalCloudProvider {
					return false, nil
				}
			}
		}
		fmt.Printf("%-8s %-30s %-10s %-12s %s\n", "NODE", "PROVIDER ID", "REGION", "ZONE", "INSTANCE TYPE")
		for _, n := range list.Items {
			fmt.Printf("%-8s %-30s %-10s %-12s %s\n", n.Name, n.Spec.ProviderID, n.Labels["topology.kubernetes.io/region"],
				n.Labels["topology.kubernetes.io/zone"], n.Labels["node.kubernetes.io/instance-type"])
		}
		return true, nil
	})
}

// demoService creates a LoadBalancer Service and prints its address.
func demoService(ctx context.Context, cs kubernetes.Interface) error {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "demo"},
			Ports: []v1.ServicePort{{Name: "http", Port: 80}}},
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create demo Service: %w", err)
	}
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := cs.CoreV1().Services("default").Get(ctx, "demo", metav1.GetOptions{})
		if err != nil || len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil //nolint:nilerr // keep polling
		}
		fmt.Printf("\nLoadBalancer Service default/demo got EXTERNAL-IP %s\n", s.Status.LoadBalancer.Ingress[0].IP)
		return true, nil
	})
}

func writePIDs(dir string, ps []*framework.Process) error {
	var b strings.Builder
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
	for i := len(lines) - 1; i >= 0; i-- {
		fields := strings.Fields(lines[i])
		if len(fields) < 2 {
			continue
		}
		pid, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		fmt.Printf("Stopping %s (pid %d)\n", fields[1], pid)
		framework.StopPID(pid, 5*time.Second)
	}
	if err := os.Remove(pidFile(dir)); err != nil {
		return fmt.Errorf("remove pid file: %w", err)
	}
	return nil
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
