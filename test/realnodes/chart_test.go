package realnodes

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// The chart's fixed names (templates/_helpers.tpl) and this test's release.
const (
	chartRelease   = "metal-ccm"
	chartName      = "metal-cloud-controller-manager" // ServiceAccount, DaemonSet, container
	chartNamespace = "kube-system"
	chartLease     = "cloud-controller-manager"
	controlPlane   = "node-role.kubernetes.io/control-plane"
)

// The chart's CCM's pool, apart from the other tests' pools.
var (
	chartPool4 = netip.MustParsePrefix("198.18.110.0/24")
	chartPool6 = netip.MustParsePrefix("2001:db8:110::/120")
)

// TestChartOnRealNodes is the README's quick start, run for real: a real
// registry (Distribution) on the lab gets the release with `make push`
// (the image, built from this tree, non-root, no shell, and the chart), one
// real node plays the control-plane node, and the chart is installed from
// the registry with the pinned Helm (helm install oci://...); the node's
// containerd pulls the image from the registry, and the pod and the
// binaries show the release's version. The CCM then runs as the chart's
// DaemonSet pod with its own ServiceAccount token (in-cluster config
// through the kubernetes Service and kube-proxy), on the host network with
// a read-only root filesystem and no capabilities; it initializes the
// nodes, announces pod routes and a LoadBalancer address to the router
// from the node's own address, and the address answers through
// kube-proxy, with no request of the CCM forbidden.
func TestChartOnRealNodes(t *testing.T) {
	requireChartTools(t)
	if err := framework.RegistryAvailable(); err != nil {
		t.Fatal(err) // hack/install-deps.sh installs it with the real nodes' packages
	}
	// The router has its sessions with node 0's own addresses: the CCM pod
	// uses the node's network.
	lab := netlab.New(t, netlab.Options{Nodes: 2, Speakers: 1, NodePeers: []int{0}})
	ctx := context.Background()
	reg, rel := pushRelease(t, lab)

	// Node 0 is the control-plane node (the chart's nodeSelector), the only
	// one that runs the CCM; node 1 is a worker. Both pull from the
	// registry; no archive holds the CCM's image.
	nodes := startChartNodes(ctx, t, lab, []string{"chart-cp", "chart-worker"}, "", false, []string{reg.Addr.String()})
	cpNode, worker := nodes[0], nodes[1]

	installChartFrom(t, rel.Chart, []string{"--version", rel.Version, "--plain-http"}, chartCloudConfig(lab), nil)
	pod := waitCCMPod(t, cpNode.Name)
	checkCCMPodSpec(t, pod)
	checkCCMProcess(t, cpNode.NetNS)
	checkRelease(t, cpNode, pod, rel)

	// The CCM initializes both nodes, its own included (it tolerates the
	// uninitialized taint), and KCM gives them pod CIDRs.
	for _, n := range nodes {
		node := waitNode(t, n.Name, time.Minute, func(node *v1.Node) bool {
			return !framework.Uninitialized(node) && node.Spec.ProviderID != "" && nodeReady(node) && len(node.Spec.PodCIDRs) == 2
		})
		t.Logf("node %s: initialized %.1fs after its start: providerID %s, pod CIDRs %v",
			n.Name, time.Since(n.Started).Seconds(), node.Spec.ProviderID, node.Spec.PodCIDRs)
	}
	sessCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := lab.WaitEstablished(sessCtx, netlab.NodeAddr(netlab.IPv4, 0), netlab.NodeAddr(netlab.IPv6, 0)); err != nil {
		t.Fatalf("the CCM's BGP sessions from %s: %v", cpNode.Name, err)
	}
	// Pod routes: traffic that node 0's kube-proxy sends to a pod on the
	// worker goes through the router.
	for i, n := range nodes {
		lab.RequireRoute(t, podCIDROf(t, n.Name, true), netlab.NodeAddr(netlab.IPv4, i))
	}

	t.Run("LoadBalancer through router and kube-proxy", func(t *testing.T) {
		// Created after the chart: its cleanup (Services released by the
		// CCM) runs while the CCM still runs.
		ns := framework.NewNamespace(t, client, framework.NamespaceName(t), framework.ReleaseServices(30*time.Second))
		defaultServiceAccount(t, ns)
		// Both pods on the worker (as the control-plane taint would have
		// it; the affinity also keeps node 0 out of the spread's domains):
		// what node 0 receives crosses to them through the router's pod
		// route.
		createDeployment(t, ns, echoDeployment("echo", 2, []string{worker.Name}))
		// Gone before the kubelets stop, and not recreated.
		t.Cleanup(func() {
			ctx := context.Background()
			_ = client.AppsV1().Deployments(ns).Delete(ctx, "echo", metav1.DeleteOptions{})
			_ = client.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app=echo"})
			deletePods(ns)
		})
		for _, p := range waitPods(t, ns, "echo", 2) {
			if p.Spec.NodeName != worker.Name {
				t.Errorf("pod %s runs on %s, want %s", p.Name, p.Spec.NodeName, worker.Name)
			}
		}
		framework.CreateLoadBalancer(t, client, ns, "echo", withTargetPort(8080))
		vip := waitVIPs(t, ns, "echo", 1)[0]
		if !chartPool4.Contains(vip) {
			t.Errorf("address %s is not from the chart's pool %s", vip, chartPool4)
		}
		// Both nodes are Ready and initialized: both are next hops, sent
		// over node 0's session.
		lab.RequireRoute(t, netlab.HostPrefix(vip), lab.NodeAddrs(netlab.IPv4)...)
		paths, err := lab.BGPPaths(netlab.HostPrefix(vip))
		if err != nil {
			t.Fatal(err)
		}
		if len(paths) == 0 {
			t.Errorf("the router's BGP table has no path for %s", vip)
		}
		for _, p := range paths {
			if p.Peer != netlab.NodeAddr(netlab.IPv4, 0) {
				t.Errorf("path %+v of %s: want it from %s's session", p, vip, cpNode.Name)
			}
		}
		waitAnswers(t, lab, vip)
		// The router spreads connections over both nodes (ECMP, hashed on
		// ports too): those that node 0 receives reach the worker's pods
		// from node 0's address (kube-proxy's masquerade).
		viaCP := 0
		for range 20 {
			r, err := clientEcho(ctx, lab, vip)
			if err != nil {
				t.Fatal(err)
			}
			if r.Node != worker.Name {
				t.Errorf("%s answered from node %q, want %s", vip, r.Node, worker.Name)
			}
			if ap, err := netip.ParseAddrPort(r.Client); err == nil && ap.Addr() == netlab.NodeAddr(netlab.IPv4, 0) {
				viaCP++
			}
		}
		t.Logf("%d of 20 requests came through %s", viaCP, cpNode.Name)
		if viaCP == 0 {
			t.Errorf("no request of 20 came through %s (from %s)", cpNode.Name, netlab.NodeAddr(netlab.IPv4, 0))
		}
	})

	checkPodLog(t, cpNode, pod, chartName)
}

// requireChartTools skips without real nodes, and fails without the pinned
// Helm or an API server that reports a version the chart accepts.
// startChartNodes starts a real node per name in the lab's node namespaces
// (node i in lab.Nodes[i]) with the test images and the CCM's image archive
// (on node 0 only, unless everywhere; none if ""), pulling other images
// from registries (HOST:PORT, plain HTTP), makes node 0 the control-plane node
// (what kubeadm gives it: the role label and the NoSchedule taint, which
// the chart tolerates and the workload does not), and serves the
// kubernetes Service from it: pods reach the API server as on a real
// cluster, through kube-proxy, to node 0's relay.
func startChartNodes(ctx context.Context, t *testing.T, lab *netlab.Lab, names []string, ccmImage string, everywhere bool, registries []string) []*framework.RealNode {
	t.Helper()
	archives, pauseRef := testImages(t)
	nodes := make([]*framework.RealNode, len(names))
	for i, name := range names {
		t.Cleanup(func() { _ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		imgs := archives
		if ccmImage != "" && (i == 0 || everywhere) {
			imgs = append(slices.Clone(archives), ccmImage)
		}
		nodes[i] = cp.StartRealNode(ctx, t, framework.RealNodeOptions{
			Name: name, NetNS: lab.Nodes[i], NodeIPs: labNodeIPs(lab, i), Images: imgs, SandboxImage: pauseRef,
			Registries: registries,
		})
	}
	markControlPlane(t, nodes[0].Name)
	if err := cp.ServeKubernetesService(ctx, nodes[0]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Delete(context.Background(), "kubernetes", metav1.DeleteOptions{})
	})
	return nodes
}

func requireChartTools(t *testing.T) {
	t.Helper()
	if err := framework.RealNodesAvailable(); err != nil {
		t.Skipf("skipping: %v", err)
	}
	// Fail, not skip, without the pinned Helm: make build builds it.
	if _, err := framework.Binary("helm"); err != nil {
		t.Fatal(err)
	}
	// The chart requires a Kubernetes version (Chart.yaml kubeVersion),
	// which helm install checks against what the API server reports: a
	// binary built without its version stamped reports v0.0.0-master.
	v, err := client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := version.ParseSemantic(v.GitVersion); err != nil || strings.HasPrefix(v.GitVersion, "v0.0.0") {
		t.Fatalf("kube-apiserver reports version %q, which the chart's kubeVersion cannot match: "+
			"build the pinned binaries with their version (-ldflags -X k8s.io/component-base/version.gitVersion=...)", v.GitVersion)
	}
}

// markControlPlane gives the node, once registered, kubeadm's control-plane
// label and taint (the kubelet here takes no --node-labels).
func markControlPlane(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels[controlPlane] = ""
			if !slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == controlPlane }) {
				n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: controlPlane, Effect: v1.TaintEffectNoSchedule})
			}
			_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			return err
		})
		if apierrors.IsNotFound(err) {
			return false, nil // not registered yet
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("label node %s as control plane: %v", name, err)
	}
}

// installChart installs the chart of this tree as installChartFrom does,
// with the CCM's image as imported (ref, pull policy Never).
func installChart(t *testing.T, ref, cloudConfig string, more map[string]any) {
	t.Helper()
	installChartFrom(t, framework.ChartDir(), nil, cloudConfig, imageValues(t, ref, more))
}

// upgradeChart is helm upgrade of installChart's release with another
// cloud-config, the same values otherwise.
func upgradeChart(t *testing.T, ref, cloudConfig string, more map[string]any) {
	t.Helper()
	file := chartValuesFile(t, cloudConfig, imageValues(t, ref, more))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := cp.Helm(ctx, "upgrade", chartRelease, framework.ChartDir(), "--namespace", chartNamespace, "-f", file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm upgrade:\n%s", out)
}

// imageValues are the chart's values for the test image ref, and more.
func imageValues(t *testing.T, ref string, more map[string]any) map[string]any {
	t.Helper()
	repo, tag, ok := strings.Cut(ref, ":"+images.Tag)
	if !ok || tag != "" {
		t.Fatalf("image reference %q does not end in :%s", ref, images.Tag)
	}
	values := map[string]any{"image": map[string]any{"repository": repo, "tag": images.Tag, "pullPolicy": "Never"}}
	maps.Copy(values, more)
	return values
}

// installChartFrom installs chart (a folder or oci://...; helm install's
// flags in args) as the README says (helm install into kube-system), with
// the cloud-config given, pod routes on and the values in more; it
// uninstalls it when the test ends, waits for the release's pods to stop
// (the CCM hands its Lease over and closes its sessions), and removes what
// the release leaves (the Lease).
func installChartFrom(t *testing.T, chart string, args []string, cloudConfig string, more map[string]any) {
	t.Helper()
	file := chartValuesFile(t, cloudConfig, more)
	t.Cleanup(uninstallChart(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := cp.Helm(ctx, append([]string{"install", chartRelease, chart, "--namespace", chartNamespace, "-f", file}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("helm install:\n%s", out)
}

// chartValuesFile writes the values of installChartFrom to a file.
func chartValuesFile(t *testing.T, cloudConfig string, more map[string]any) string {
	t.Helper()
	values := map[string]any{
		"cloudConfig": cloudConfig,
		// Pod routes need the cluster's CIDRs; KCM allocates the nodes'
		// pod CIDRs. The short periods keep the test fast.
		"extraArgs": []string{
			"--cluster-cidr=" + framework.DefaultClusterCIDR, "--allocate-node-cidrs=false",
			"--configure-cloud-routes=true", "--route-reconciliation-period=2s", "--node-monitor-period=1s",
		},
	}
	maps.Copy(values, more)
	data, err := yaml.Marshal(values)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// uninstallChart is installChart's cleanup.
func uninstallChart(t *testing.T) func() {
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := cp.Helm(ctx, "uninstall", chartRelease, "--namespace", chartNamespace); err != nil {
			t.Errorf("helm uninstall: %v", err)
		}
		// The garbage collector deletes the DaemonSet's pods and the
		// kubelet stops them: a clean stop takes at most 10 s. A pod still
		// there after that is removed from the API, before its kubelet
		// stops (no one would then).
		sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/part-of=metal-ccm"} // the CCM's and the agents'
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 45*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := client.CoreV1().Pods(chartNamespace).List(ctx, sel)
			return err == nil && len(l.Items) == 0, nil
		})
		if err != nil {
			t.Logf("the release's pods did not stop after helm uninstall (%v): deleting them", err)
			_ = client.CoreV1().Pods(chartNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, sel)
		}
		_ = client.CoordinationV1().Leases(chartNamespace).Delete(ctx, chartLease, metav1.DeleteOptions{})
	}
}

// chartCloudConfig is the cloud-config of the chart's CCM: a pool of its
// own, and the router's sessions from node 0's addresses (the pod uses the
// node's network).
func chartCloudConfig(lab *netlab.Lab) string {
	return lab.CloudConfigFrom(netlab.NodeAddr(netlab.IPv4, 0), netlab.NodeAddr(netlab.IPv6, 0), chartPool4.String(), chartPool6.String()) +
		"routes:\n  enabled: true\n"
}

// waitCCMPod waits until the DaemonSet runs its one pod, on node, Ready.
func waitCCMPod(t *testing.T, node string) *v1.Pod {
	t.Helper()
	sel := metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + chartName}
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(chartNamespace).List(ctx, sel)
		if err != nil {
			return false, nil //nolint:nilerr // retried
		}
		pods = l.Items
		return len(pods) == 1 && pods[0].DeletionTimestamp == nil && podReady(&pods[0]), nil
	})
	if err != nil {
		var states []string
		for _, p := range pods {
			states = append(states, fmt.Sprintf("%s on %q: %s %v %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses))
		}
		ds, _ := client.AppsV1().DaemonSets(chartNamespace).Get(context.Background(), chartName, metav1.GetOptions{})
		t.Fatalf("the chart's DaemonSet has no one Ready pod: %v; pods %v; DaemonSet status %+v", err, states, dsStatus(ds))
	}
	p := &pods[0]
	if p.Spec.NodeName != node {
		t.Fatalf("the CCM pod %s runs on %q, want the control-plane node %s", p.Name, p.Spec.NodeName, node)
	}
	t.Logf("CCM pod %s Ready on %s", p.Name, node)
	return p
}

func dsStatus(ds *appsv1.DaemonSet) any {
	if ds == nil {
		return nil
	}
	return ds.Status
}

// checkCCMPodSpec checks what the pod runs with: the chart's own
// ServiceAccount and its token, in-cluster configuration (no kubeconfig),
// the node's network, non-root, a read-only root filesystem and no
// capabilities.
func checkCCMPodSpec(t *testing.T, p *v1.Pod) {
	t.Helper()
	s := p.Spec
	if s.ServiceAccountName != chartName {
		t.Errorf("serviceAccountName %q, want %s", s.ServiceAccountName, chartName)
	}
	if s.AutomountServiceAccountToken != nil && !*s.AutomountServiceAccountToken {
		t.Error("the ServiceAccount token is not mounted")
	}
	token := slices.ContainsFunc(s.Volumes, func(v v1.Volume) bool {
		return v.Projected != nil && slices.ContainsFunc(v.Projected.Sources, func(src v1.VolumeProjection) bool {
			return src.ServiceAccountToken != nil
		})
	})
	if !token {
		t.Errorf("no projected ServiceAccount token among the volumes %v", s.Volumes)
	}
	if !s.HostNetwork {
		t.Error("hostNetwork is false")
	}
	if s.SecurityContext == nil || !ptr.Deref(s.SecurityContext.RunAsNonRoot, false) {
		t.Errorf("pod securityContext %+v: want runAsNonRoot", s.SecurityContext)
	}
	if len(s.Containers) != 1 {
		t.Fatalf("want one container, have %d", len(s.Containers))
	}
	c := s.Containers[0]
	if slices.ContainsFunc(c.Args, func(a string) bool {
		return strings.HasPrefix(a, "--kubeconfig") || strings.HasPrefix(a, "--master")
	}) {
		t.Errorf("the CCM is given a kubeconfig or master, not in-cluster configuration: %v", c.Args)
	}
	sc := c.SecurityContext
	if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
		ptr.Deref(sc.Privileged, false) || sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") ||
		len(sc.Capabilities.Add) > 0 {
		t.Errorf("container securityContext %+v: want a read-only root filesystem, no privilege escalation, all capabilities dropped and none added", sc)
	}
}

// checkCCMProcess checks the running CCM as the kernel sees it: the process
// in the node's network namespace whose arguments are the chart's runs as
// user 65532 with no capabilities, no new privileges and a seccomp filter.
func checkCCMProcess(t *testing.T, netns string) {
	t.Helper()
	pid, err := ccmPID(netns)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	s := bufio.NewScanner(strings.NewReader(string(b)))
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok {
			status[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	for k, want := range map[string]string{
		"Uid": "65532 65532 65532 65532", "Gid": "65532 65532 65532 65532",
		"CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapAmb": "0000000000000000",
		"NoNewPrivs": "1", "Seccomp": "2",
	} {
		if status[k] != want {
			t.Errorf("CCM process %d: %s %q, want %q", pid, k, status[k], want)
		}
	}
	t.Logf("CCM process %d: uid %s, effective capabilities %s, seccomp %s", pid, status["Uid"], status["CapEff"], status["Seccomp"])

	// In-cluster configuration: the process talks to the API server at the
	// kubernetes Service's address (kube-proxy sends it on to the relay).
	svc, err := client.CoreV1().Services(metav1.NamespaceDefault).Get(context.Background(), "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The pod is Ready as soon as it runs (no readiness probe): give the
	// CCM time to connect.
	api := netip.AddrPortFrom(netip.MustParseAddr(svc.Spec.ClusterIP), 443)
	var last error
	err = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		n, err := establishedTo(pid, api)
		last = err
		return n > 0, nil
	})
	if err != nil {
		t.Errorf("CCM process %d has no connection to the kubernetes Service at %s: %v (%v)", pid, api, err, last)
	}
}

// establishedTo counts the process's established IPv4 TCP connections to
// dst: its sockets (fd links socket:[INODE]) among the lines of
// /proc/PID/net/tcp, whose addresses are the kernel's 32-bit words in hex,
// in the machine's byte order, and ports in hex.
func establishedTo(pid int, dst netip.AddrPort) (int, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return 0, fmt.Errorf("sockets of %d: %w", pid, err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		if l, err := os.Readlink(filepath.Join(dir, "fd", fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "net", "tcp")) //nolint:gosec // a process's sockets under /proc
	if err != nil {
		return 0, fmt.Errorf("sockets of %d: %w", pid, err)
	}
	var word [4]byte
	binary.NativeEndian.PutUint32(word[:], binary.BigEndian.Uint32(dst.Addr().AsSlice()))
	want := fmt.Sprintf("%08X:%04X", binary.BigEndian.Uint32(word[:]), dst.Port())
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(f) > 9 && f[2] == want && f[3] == "01" && inodes[f[9]] {
			n++
		}
	}
	return n, nil
}

// ccmPID finds the CCM's process: in the network namespace netns, started
// with the chart's --cloud-config.
func ccmPID(netns string) (int, error) {
	var want syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/run/netns", netns), &want); err != nil {
		return 0, fmt.Errorf("find the CCM process: %w", err)
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, fmt.Errorf("find the CCM process: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "net"), &st) != nil || st.Ino != want.Ino || st.Dev != want.Dev {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if strings.HasSuffix(args[0], chartName) && slices.Contains(args, "--cloud-config=/etc/metal-ccm/config/cloud-config.yaml") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no CCM process in network namespace %s", netns)
}

// forbidden is what the API server's refusals look like in a client's log.
var forbidden = regexp.MustCompile(`(?i)forbidden`)

// checkPodLog reads a container's log from the node (as the kubelet wrote
// it) and fails on any refusal of the API server: the chart's RBAC must
// cover everything the CCM and the agents do.
func checkPodLog(t *testing.T, n *framework.RealNode, p *v1.Pod, container string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(n.PodLogsDir(), p.Namespace+"_"+p.Name+"_"+string(p.UID), container, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no log of container %s under %s: %v", container, n.PodLogsDir(), err)
	}
	lines := 0
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // the node's pod logs
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" {
				continue
			}
			lines++
			if forbidden.MatchString(line) {
				t.Errorf("%s's log (%s) has a refusal: %s", container, f, line)
			}
		}
	}
	if lines == 0 {
		t.Errorf("%s's log %v is empty", container, files)
	}
	t.Logf("%s's log on %s: %d lines, none forbidden", container, n.Name, lines)
}
