package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// RealNodeOptions describe a real node: a kubelet, its containerd and a
// kube-proxy in an existing network namespace (a netlab node namespace).
type RealNodeOptions struct {
	// Name is the Node's name. Required.
	Name string
	// NetNS is the network namespace, as named under /run/netns. Required.
	NetNS string
	// NodeIPs are the kubelet's --node-ip: the node's addresses in NetNS,
	// at most one per family. Required.
	NodeIPs []string
	// PodCIDRs are the node's pod CIDRs (at most one per family), written
	// to the Node's spec.podCIDRs once it registers when no controller has
	// allocated any. Empty: kube-controller-manager allocates them (Options
	// RealNodes). Either way the kubelet hands spec.podCIDRs to containerd,
	// which renders the CNI config from them.
	PodCIDRs []string
	// ClusterCIDR is kube-proxy's clusterCIDR (default DefaultClusterCIDR).
	ClusterCIDR string
	// Images are OCI image archives imported into the node's containerd
	// (test/images builds them); SandboxImage, the reference of the pause
	// image among them, is containerd's sandbox image. Required.
	Images       []string
	SandboxImage string
	// Registries are registries (HOST:PORT, such as a StartRegistry's
	// Addr) that containerd pulls from over plain HTTP: a pod's image
	// HOST:PORT/REPOSITORY:TAG that no archive holds is pulled from there.
	Registries []string
	// NoKubeProxy leaves kube-proxy out.
	NoKubeProxy bool
	// NodeIdentity runs the kubelet as the node itself, system:node:NAME in
	// the group system:nodes (a client certificate signed by the API
	// server's client CA, through the same relay), with serverTLSBootstrap:
	// the kubelet asks for its serving certificate (signer
	// kubernetes.io/kubelet-serving) for its node's addresses. The test
	// gives the group its rights (BindNodeRole). Without it the kubelet uses
	// the admin's token and serves a self-signed certificate.
	NodeIdentity bool
}

// RealNode is a running real node. Its processes are stopped by PID.
type RealNode struct {
	Name  string
	NetNS string
	// NodeIPs are the kubelet's --node-ip.
	NodeIPs []string
	// Dir holds the node's containerd, kubelet and kube-proxy state, configs
	// and logs.
	Dir                            string
	Containerd, Kubelet, KubeProxy *Process
	// Started is when StartRealNode began; KubeletStarted, when the
	// kubelet was started.
	Started, KubeletStarted time.Time

	cgroupRoot string   // the kubelet's cgroupRoot, e.g. /mccm-node0-1a2b3c
	cgroupDirs []string // cgroupRoot in every hierarchy (made by the node in the v1 ones)
	relay      *Relay
	stopOnce   sync.Once
	cancel     context.CancelFunc // ends setPodCIDRs
	// holdsRunDirs: the node counts in runDirs.
	holdsRunDirs bool
	stopErr      error
}

// RealNodesAvailable says why real nodes cannot run here (not root, a tool
// or binary missing), or nil.
func RealNodesAvailable() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("real nodes need root (euid %d)", os.Geteuid())
	}
	for _, bin := range []string{"containerd", "ctr", "runc", "nsenter", "nft"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("real nodes need %s (run hack/install-deps.sh as root): %w", bin, err)
		}
	}
	if _, err := cniBinDir(); err != nil {
		return err
	}
	for _, b := range []string{"kubelet", "kube-proxy"} {
		if _, err := Binary(b); err != nil {
			return err
		}
	}
	return nil
}

// StartRealNode starts a real node in o.NetNS for a test and stops it in
// t.Cleanup (its logs' tails printed if the test failed). It fails the test
// if the node cannot start; nothing of it is left running then.
func (cp *ControlPlane) StartRealNode(ctx context.Context, t testing.TB, o RealNodeOptions) *RealNode {
	t.Helper()
	n, err := cp.startRealNode(ctx, o)
	if n != nil {
		t.Cleanup(func() {
			if t.Failed() {
				for _, p := range n.processes() {
					t.Logf("%s %s log (%s), last %d lines:\n%s", n.Name, p.Name, p.LogPath, FailureLogLines, p.LogTail(FailureLogLines))
				}
			}
			if err := n.Stop(); err != nil {
				t.Errorf("stop real node %s: %v", n.Name, err)
			}
			if !t.Failed() {
				_ = os.RemoveAll(n.Dir)
			} else {
				t.Logf("real node %s: files kept in %s", n.Name, n.Dir)
			}
		})
	}
	if err != nil {
		t.Fatalf("start real node %s: %v", o.Name, err)
	}
	return n
}

// LaunchRealNode starts a real node outside a test (make run); the caller
// stops it with Stop. On error nothing of it is left running, and the node
// is returned when it got far enough to have logs (Dir).
func (cp *ControlPlane) LaunchRealNode(ctx context.Context, o RealNodeOptions) (*RealNode, error) {
	return cp.startRealNode(ctx, o)
}

// startRealNode starts containerd, the kubelet and kube-proxy. On error the
// node is stopped (and returned, for its logs).
func (cp *ControlPlane) startRealNode(ctx context.Context, o RealNodeOptions) (n *RealNode, err error) {
	if o.Name == "" || o.NetNS == "" || len(o.NodeIPs) == 0 || o.SandboxImage == "" {
		return nil, errors.New("real node: Name, NetNS, NodeIPs and SandboxImage are required")
	}
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = DefaultClusterCIDR
	}
	if err := RealNodesAvailable(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join("/run/netns", o.NetNS)); err != nil {
		return nil, fmt.Errorf("real node: network namespace: %w", err)
	}
	// Short: the containerd socket's path must fit in 108 bytes.
	dir, err := os.MkdirTemp("", "mccm-"+o.Name+"-")
	if err != nil {
		return nil, fmt.Errorf("real node: %w", err)
	}
	n = &RealNode{Name: o.Name, NetNS: o.NetNS, NodeIPs: o.NodeIPs, Dir: dir, Started: time.Now(),
		cgroupRoot: "/" + filepath.Base(dir)}
	n.holdsRunDirs = true
	holdRunDirs()
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
		}
	}()
	if err := n.makeCgroupRoot(); err != nil {
		return n, err
	}
	// A node forwards (kubeadm's preflight requires it): kube-proxy sends
	// a LoadBalancer connection on to a pod on another node. The CNI bridge
	// plugin turns it on only with the node's first pod, which a node that
	// runs host-network pods alone never has.
	if out, err := exec.Command("nsenter", "--net="+filepath.Join("/run/netns", o.NetNS), "--", //nolint:gosec // the harness's own namespace
		"sysctl", "-q", "-w", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1").CombinedOutput(); err != nil {
		return n, fmt.Errorf("real node %s: forwarding: %w: %s", n.Name, err, out)
	}
	kubeconfig, err := n.relayAPIServer(cp)
	if err != nil {
		return n, err
	}
	if err := n.startContainerd(ctx, o); err != nil {
		return n, err
	}
	kubeletKubeconfig := kubeconfig
	if o.NodeIdentity {
		kubeletKubeconfig = n.KubeletKubeconfig()
		if err := cp.writeNodeKubeconfig(kubeletKubeconfig, n.Name, n.relay.port); err != nil {
			return n, err
		}
	}
	if err := n.startKubelet(ctx, o, kubeletKubeconfig); err != nil {
		return n, fmt.Errorf("real node %s: kubelet: %w", n.Name, err)
	}
	if !o.NoKubeProxy {
		if err := n.startKubeProxy(o, kubeconfig); err != nil {
			return n, err
		}
	}
	if len(o.PodCIDRs) > 0 {
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		n.cancel = cancel
		go n.setPodCIDRs(pctx, cp, o.PodCIDRs)
	}
	return n, nil
}

// setPodCIDRs writes the node's pod CIDRs into its spec once the kubelet has
// registered it, when no controller did: the CCM announces pod routes from
// spec.podCIDRs. It gives up after a minute.
func (n *RealNode) setPodCIDRs(ctx context.Context, cp *ControlPlane, cidrs []string) {
	cs, err := cp.Client()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	patch := fmt.Sprintf(`{"spec":{"podCIDR":%q,"podCIDRs":["%s"]}}`, cidrs[0], strings.Join(cidrs, `","`))
	for ctx.Err() == nil {
		node, err := cs.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err == nil {
			if len(node.Spec.PodCIDRs) > 0 {
				return
			}
			if _, err := cs.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startInNetNS starts a daemon of the node in its network namespace with
// nsenter --net (not `ip netns exec`, which remounts /sys: the kubelet then
// finds no cgroup mounts).
func (n *RealNode) startInNetNS(name, bin string, args ...string) (*Process, error) {
	return StartProcess(n.Name+"-"+name, filepath.Join(n.Dir, "logs", name+".log"), false,
		"nsenter", append([]string{"--net=" + filepath.Join("/run/netns", n.NetNS), "--", bin}, args...)...)
}

func (n *RealNode) processes() []*Process {
	var ps []*Process
	for _, p := range []*Process{n.Containerd, n.Kubelet, n.KubeProxy} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// relayAPIServer makes the API server reachable on port APIPort of every
// address of the node's namespace (RelayAPIServer). The node's daemons use
// 127.0.0.1; pods reach it through the kubernetes Service
// (ServeKubernetesService). It returns the node's kubeconfig: the admin's
// token (a kubelet with NodeIdentity uses its own, KubeletKubeconfig).
func (n *RealNode) relayAPIServer(cp *ControlPlane) (string, error) {
	r, err := cp.RelayAPIServer(n.NetNS)
	if err != nil {
		return "", fmt.Errorf("real node %s: %w", n.Name, err)
	}
	n.relay = r
	kubeconfig := filepath.Join(n.Dir, "kubeconfig")
	if err := r.WriteKubeconfig(kubeconfig, "admin", cp.adminToken); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

// httpOK reports whether url, fetched from the node's namespace, answers 200.
func (n *RealNode) httpOK(ctx context.Context, url string) bool {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return DialInNetNS(ctx, n.NetNS, network, addr)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Get does an HTTP GET of url from the node's network namespace and returns
// the body.
func (n *RealNode) Get(ctx context.Context, url string) (string, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return DialInNetNS(ctx, n.NetNS, network, addr)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("get %s from %s: %w", url, n.Name, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("get %s from %s: %w", url, n.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("get %s from %s: %w", url, n.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		return string(b), fmt.Errorf("get %s from %s: %s", url, n.Name, resp.Status)
	}
	return string(b), nil
}

// Usage is the resource use of the node's own processes: containerd, the
// kubelet, kube-proxy and the containerd shims (not the pods' containers).
func (n *RealNode) Usage() (ProcStat, error) {
	pids := n.strayPIDs()
	for _, p := range n.processes() {
		if !p.Exited() {
			pids = append(pids, p.PID())
		}
	}
	var sum ProcStat
	for _, pid := range pids {
		st, err := ReadProcStat(pid)
		if err != nil {
			return sum, err
		}
		sum.RSS += st.RSS
		sum.PeakRSS += st.PeakRSS
		sum.CPU += st.CPU
	}
	return sum, nil
}

// Stop stops the node and removes what it made on the machine, except its
// files: kube-proxy and the kubelet (SIGTERM, SIGKILL after 10 s), every
// task and container (ctr), what still runs in the node's cgroups or
// bundles (SIGKILL, by PID), containerd, leftover shim sockets, then the mounts under the node's dir (pod network
// namespaces, volumes, container root file systems), the API relay and the
// node's cgroups. Safe to call more than once.
func (n *RealNode) Stop() error {
	n.stopOnce.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		var errs []error
		for _, p := range []*Process{n.KubeProxy, n.Kubelet} {
			if p != nil {
				p.Stop(10 * time.Second)
			}
		}
		if n.Containerd != nil && !n.Containerd.Exited() {
			n.stopContainers(context.Background())
		}
		ids := n.taskIDs()
		n.killCgroupProcs()
		for _, pid := range n.strayPIDs() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if n.Containerd != nil {
			n.Containerd.Stop(10 * time.Second)
		}
		for range 50 {
			if len(n.strayPIDs()) == 0 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, id := range ids {
			_ = os.Remove(n.shimSocket(id))
		}
		if err := unmountUnder(n.Dir); err != nil {
			errs = append(errs, err)
		}
		if n.relay != nil {
			n.relay.Close()
		}
		n.killCgroupProcs()
		if err := n.removeCgroups(); err != nil {
			errs = append(errs, err)
		}
		if n.holdsRunDirs {
			releaseRunDirs()
		}
		n.stopErr = errors.Join(errs...)
	})
	return n.stopErr
}

// unmountUnder detaches every mount under dir, deepest first.
func unmountUnder(dir string) error {
	var errs []error
	for range 3 {
		mounts, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, m := range mounts {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mounts: %w", err)
	}
	defer func() { _ = f.Close() }()
	var out []string
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		if mp := unescapeMountPath(fields[4]); strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("mounts: %w", err)
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out), nil
}

// runDirs are the directories under /run that containerd's shims make for
// their sockets whatever containerd's state dir is. The ones that did not
// exist when this process's first real node started are removed, if empty,
// when its last one stops.
var runDirs struct {
	sync.Mutex
	nodes int
	made  []string // deepest first
}

func holdRunDirs() {
	runDirs.Lock()
	defer runDirs.Unlock()
	if runDirs.nodes == 0 {
		runDirs.made = nil
		for _, d := range []string{"/run/containerd/s", "/run/containerd"} {
			if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
				runDirs.made = append(runDirs.made, d)
			}
		}
	}
	runDirs.nodes++
}

func releaseRunDirs() {
	runDirs.Lock()
	defer runDirs.Unlock()
	runDirs.nodes--
	if runDirs.nodes == 0 {
		for _, d := range runDirs.made {
			_ = os.Remove(d) // only if empty
		}
	}
}

// Kubeconfig is the node's kubeconfig (the admin's token, at the node's API
// relay), for other clients in the node's namespace.
func (n *RealNode) Kubeconfig() string { return filepath.Join(n.Dir, "kubeconfig") }

// KubeletKubeconfig is the kubelet's kubeconfig with NodeIdentity: the
// node's own client certificate, at the node's API relay.
func (n *RealNode) KubeletKubeconfig() string { return filepath.Join(n.Dir, "kubelet-kubeconfig") }

// WriteKubeconfig writes a kubeconfig for a client in the node's namespace:
// the node's API relay, the given user and token.
func (n *RealNode) WriteKubeconfig(path, user, token string) error {
	return n.relay.WriteKubeconfig(path, user, token)
}
