package framework

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// kubeletConfig is a node's KubeletConfiguration. This machine has cgroup
// v1 and PID 1 is not systemd: failCgroupV1 false, the cgroupfs driver, and
// the node's own cgroupRoot so that two kubelets never collect each other's
// pod cgroups. The API server reaches no kubelet here, so the kubelet's own
// API allows everything on the node's namespace only. Eviction thresholds
// are low: the machine's disk and memory are shared with other tests. The
// node Lease is short (renewed every quarter of it), so that a killed kubelet
// turns its node NotReady within seconds (NodeMonitorGracePeriod). With
// NodeIdentity the kubelet asks for its serving certificate instead of
// signing one itself.
func kubeletConfig(n *RealNode, o RealNodeOptions) string {
	extra := ""
	if len(o.PodCIDRs) > 0 {
		extra = fmt.Sprintf("podCIDR: %q\n", strings.Join(o.PodCIDRs, ","))
	}
	if o.NodeIdentity {
		extra += "serverTLSBootstrap: true\n"
	}
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]q
cgroupsPerQOS: true
containerRuntimeEndpoint: %[2]q
%[3]saddress: %[4]q
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
failSwapOn: false
resolvConf: ""
nodeStatusUpdateFrequency: 2s
nodeStatusReportFrequency: 10s
syncFrequency: 10s
fileCheckFrequency: 10s
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
  nodefs.inodesFree: 1%%
localStorageCapacityIsolation: false
maxPods: 20
podLogsDir: %[5]q
nodeLeaseDurationSeconds: %[6]d
`, n.cgroupRoot, "unix://"+containerdSocket(n.Dir), extra, o.NodeIPs[0],
		n.PodLogsDir(), NodeLeaseDurationSeconds)
}

// kubeProxyConfig is a node's kube-proxy: nftables mode, its health check
// on every address of the node (the port of healthCheckNodePort's checks),
// and conntrack limits left as the machine has them (they are global).
func kubeProxyConfig(n *RealNode, o RealNodeOptions, kubeconfig string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
hostnameOverride: %[1]q
clientConnection:
  kubeconfig: %[2]q
clusterCIDR: %[3]q
detectLocalMode: ClusterCIDR
healthzBindAddress: "0.0.0.0:10256"
metricsBindAddress: "127.0.0.1:10249"
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, n.Name, kubeconfig, o.ClusterCIDR)
}

// NodeLeaseDurationSeconds is the real nodes' Lease duration; the kubelet
// renews it every quarter of that. NodeMonitorGracePeriod, the
// node-lifecycle controller's, is a little longer.
const (
	NodeLeaseDurationSeconds = 8
	NodeMonitorGracePeriod   = 10 * time.Second
)

// PodLogsDir holds the node's container logs
// (NAMESPACE_POD_UID/CONTAINER/N.log), as /var/log/pods does on a real node.
func (n *RealNode) PodLogsDir() string { return filepath.Join(n.Dir, "pod-logs") }

func (n *RealNode) startKubelet(ctx context.Context, o RealNodeOptions, kubeconfig string) error {
	bin, err := Binary("kubelet")
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.Dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(n, o)), 0o600); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	root := filepath.Join(n.Dir, "kubelet")
	if err := os.MkdirAll(root, 0o750); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	n.KubeletStarted = time.Now()
	n.Kubelet, err = n.startInNetNS("kubelet", bin,
		"--config", cfg, "--kubeconfig", kubeconfig,
		"--root-dir", root, "--cert-dir", filepath.Join(root, "pki"),
		"--cloud-provider", "external",
		"--node-ip", strings.Join(o.NodeIPs, ","),
		"--hostname-override", n.Name,
		"--v", "2")
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// The healthz port is on the node namespace's loopback.
	return waitFor(wctx, n.Kubelet, 200*time.Millisecond, func() bool {
		return n.httpOK(wctx, "http://127.0.0.1:10248/healthz")
	})
}

func (n *RealNode) startKubeProxy(o RealNodeOptions, kubeconfig string) error {
	bin, err := Binary("kube-proxy")
	if err != nil {
		return err
	}
	cfg := filepath.Join(n.Dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(kubeProxyConfig(n, o, kubeconfig)), 0o600); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	n.KubeProxy, err = n.startInNetNS("kube-proxy", bin, "--config", cfg, "--v", "2")
	return err
}

// RestartKubeProxy starts the node's kube-proxy again, with the same
// config, after it stopped (a test killed it). Its log is appended to.
func (n *RealNode) RestartKubeProxy() error {
	if n.KubeProxy == nil || !n.KubeProxy.Exited() {
		return fmt.Errorf("real node %s: kube-proxy is not stopped", n.Name)
	}
	bin, err := Binary("kube-proxy")
	if err != nil {
		return err
	}
	n.KubeProxy, err = n.startInNetNS("kube-proxy", bin, "--config", filepath.Join(n.Dir, "kube-proxy.yaml"), "--v", "2")
	return err
}

// StopKubeProxy kills the node's kube-proxy (SIGKILL) and deletes its
// nftables tables, as a kube-proxy that crashed and whose rules a restart
// of the firewall removed: the node stays Ready, and forwards no Service
// traffic. RestartKubeProxy brings both back.
func (n *RealNode) StopKubeProxy() error {
	if n.KubeProxy == nil {
		return fmt.Errorf("real node %s: no kube-proxy", n.Name)
	}
	n.KubeProxy.Kill()
	for _, family := range []string{"ip", "ip6"} {
		out, err := exec.Command("ip", "netns", "exec", n.NetNS, "nft", "delete", "table", family, "kube-proxy").CombinedOutput() //nolint:gosec // the node's own namespace
		if err != nil {
			return fmt.Errorf("real node %s: delete kube-proxy's %s table: %w: %s", n.Name, family, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// cgroupMounts are the mount points of the cgroup v1 hierarchies (named
// ones too, as name=systemd) and of cgroup v2 (hybrid: /sys/fs/cgroup/unified),
// from /proc/self/mountinfo.
func cgroupMounts() (v1, v2 []string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, nil, fmt.Errorf("cgroup mounts: %w", err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if len(fields) < 5 || len(postFields) < 1 {
			continue
		}
		switch postFields[0] {
		case "cgroup":
			v1 = append(v1, unescapeMountPath(fields[4]))
		case "cgroup2":
			v2 = append(v2, unescapeMountPath(fields[4]))
		}
	}
	if err := s.Err(); err != nil {
		return nil, nil, fmt.Errorf("cgroup mounts: %w", err)
	}
	slices.Sort(v1)
	slices.Sort(v2)
	return slices.Compact(v1), slices.Compact(v2), nil
}

// makeCgroupRoot creates the node's cgroupRoot in every v1 hierarchy, with
// cpuset.cpus and cpuset.mems copied from the hierarchy's root (a new
// cpuset cgroup starts empty, and no process could join it).
func (n *RealNode) makeCgroupRoot() error {
	mounts, v2, err := cgroupMounts()
	if err != nil {
		return err
	}
	// runc also makes the container's cgroups in a hybrid machine's v2
	// hierarchy: the node removes its cgroupRoot there too.
	for _, m := range v2 {
		n.cgroupDirs = append(n.cgroupDirs, filepath.Join(m, n.cgroupRoot))
	}
	if len(mounts) == 0 {
		return errors.New("real node: no cgroup v1 hierarchy (a cgroup v2 machine needs a cgroup v2 setup)")
	}
	for _, m := range mounts {
		dir := filepath.Join(m, n.cgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil { //nolint:gosec // cgroup directories are 0755
			return fmt.Errorf("real node: cgroup: %w", err)
		}
		n.cgroupDirs = append(n.cgroupDirs, dir)
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			b, err := os.ReadFile(filepath.Join(m, f)) //nolint:gosec // cgroup files
			if err != nil {
				continue // not the cpuset hierarchy
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil { //nolint:gosec // the node's own cgroup
				return fmt.Errorf("real node: cgroup %s: %w", f, err)
			}
		}
	}
	return nil
}

// killCgroupProcs sends SIGKILL to every process in the node's cgroups, by
// PID: the pods' containers, which outlive the kubelet and containerd.
func (n *RealNode) killCgroupProcs() int {
	killed := 0
	for _, root := range n.cgroupDirs {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil //nolint:nilerr // a cgroup removed while walking
			}
			b, err := os.ReadFile(p) //nolint:gosec // under the node's cgroup
			if err != nil {
				return nil //nolint:nilerr // a cgroup removed while walking
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					if syscall.Kill(pid, syscall.SIGKILL) == nil {
						killed++
					}
				}
			}
			return nil
		})
	}
	return killed
}

// removeCgroups removes the node's cgroups, deepest first, retrying while
// killed processes leave them.
func (n *RealNode) removeCgroups() error {
	var errs []error
	for _, root := range n.cgroupDirs {
		var dirs []string
		if _, err := os.Stat(root); err != nil {
			continue
		}
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
		for _, d := range dirs {
			var err error
			for range 50 {
				if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
					err = nil
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
