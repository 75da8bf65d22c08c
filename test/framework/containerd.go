package framework

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cniBinDirs are where Debian's containernetworking-plugins (and upstream
// tarballs) put the CNI plugins.
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

func cniBinDir() (string, error) {
	for _, d := range cniBinDirs {
		if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("CNI bridge plugin not found in %v (run hack/install-deps.sh as root)", cniBinDirs)
}

// containerdConfig is a node's containerd: everything under dir, the CRI
// plugin with runc (cgroupfs: PID 1 is not systemd here), the sandbox image
// imported from an archive, and a CNI conflist rendered by the CRI plugin
// from the pod CIDRs the kubelet sends (conf_template), its host-local
// state under dir too.
//
//   - restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, and runc
//     fails ("can't get final child's PID from pipe") when it may not lower
//     oom_score_adj.
//   - netns_mounts_under_state_dir: pod network namespaces are mounted under
//     the node's state dir, not /var/run/netns, so they are the node's alone.
//   - runc keeps its state under dir (Root), not /run/containerd/runc.
//   - the native snapshotter works on any file system; the test images are a
//     few MiB.
//   - registries are configured by the hosts files under dir/certs.d
//     (config_path; writeRegistryHosts), as on a kubeadm node's
//     /etc/containerd/certs.d.
func containerdConfig(dir, sandboxImage, cniBin string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[4]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[9]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
    conf_template = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[10]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), containerdSocket(dir),
		filepath.Join(dir, "opt"), sandboxImage, cniBin,
		filepath.Join(dir, "cni", "net.d"), filepath.Join(dir, "cni", "template.json"), filepath.Join(dir, "runc"),
		filepath.Join(dir, "certs.d"))
}

// writeRegistryHosts writes containerd's hosts file of each registry
// (HOST:PORT) under dir/certs.d: pulls from it go over plain HTTP, as
// `server = "http://HOST:PORT"` says (a lab's registry has no TLS).
func writeRegistryHosts(dir string, registries []string) error {
	if err := os.MkdirAll(filepath.Join(dir, "certs.d"), 0o750); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	for _, r := range registries {
		d := filepath.Join(dir, "certs.d", r)
		if err := os.MkdirAll(d, 0o750); err != nil {
			return fmt.Errorf("real node: %w", err)
		}
		hosts := fmt.Sprintf("server = %[1]q\n\n[host.%[1]q]\n  capabilities = [\"pull\", \"resolve\"]\n", "http://"+r)
		if err := os.WriteFile(filepath.Join(d, "hosts.toml"), []byte(hosts), 0o600); err != nil {
			return fmt.Errorf("real node: %w", err)
		}
	}
	return nil
}

// cniTemplate is the CNI conflist the CRI plugin renders once the kubelet
// sends the node's pod CIDRs (one range per family): a bridge with the
// gateway on the node, no masquerade (pods are routed, no overlay), and
// host-local IPAM with its leases under the node's dir.
func cniTemplate(ipamDir string) string {
	return `{
  "cniVersion": "0.4.0",
  "name": "mccm-pods",
  "plugins": [{
    "type": "bridge",
    "bridge": "cni0",
    "isGateway": true,
    "ipMasq": false,
    "hairpinMode": true,
    "ipam": {
      "type": "host-local",
      "dataDir": ` + strconv.Quote(ipamDir) + `,
      "ranges": [{{range $i, $r := .PodCIDRRanges}}{{if $i}}, {{end}}[{"subnet": "{{$r}}"}]{{end}}],
      "routes": [{{range $i, $r := .Routes}}{{if $i}}, {{end}}{"dst": "{{$r}}"}{{end}}]
    }
  }]
}
`
}

func containerdSocket(dir string) string { return filepath.Join(dir, "containerd.sock") }

// startContainerd writes the node's containerd config and starts it in the
// node's network namespace, then waits until it answers and imports the
// image archives into its k8s.io namespace. It pulls other images from the
// registries of o.Registries.
func (n *RealNode) startContainerd(ctx context.Context, o RealNodeOptions) error {
	containerd, err := exec.LookPath("containerd")
	if err != nil {
		return fmt.Errorf("real node: %w (run hack/install-deps.sh as root)", err)
	}
	cniBin, err := cniBinDir()
	if err != nil {
		return err
	}
	for _, d := range []string{"root", "state", "opt", "cni/net.d", "cni/ipam"} {
		if err := os.MkdirAll(filepath.Join(n.Dir, d), 0o750); err != nil {
			return fmt.Errorf("real node: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(n.Dir, "cni", "template.json"), []byte(cniTemplate(filepath.Join(n.Dir, "cni", "ipam"))), 0o600); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	if err := writeRegistryHosts(n.Dir, o.Registries); err != nil {
		return err
	}
	cfg := filepath.Join(n.Dir, "containerd.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(n.Dir, o.SandboxImage, cniBin)), 0o600); err != nil {
		return fmt.Errorf("real node: %w", err)
	}
	n.Containerd, err = n.startInNetNS("containerd", containerd, "--config", cfg)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitFor(wctx, n.Containerd, 200*time.Millisecond, func() bool {
		_, err := n.Ctr(wctx, "version")
		return err == nil
	}); err != nil {
		return fmt.Errorf("real node %s: containerd: %w", n.Name, err)
	}
	for _, archive := range o.Images {
		if out, err := n.Ctr(ctx, "images", "import", "--snapshotter", "native", archive); err != nil {
			return fmt.Errorf("real node %s: import %s: %w: %s", n.Name, archive, err, out)
		}
	}
	return nil
}

// Ctr runs `ctr -n k8s.io` against the node's containerd and returns its
// output.
func (n *RealNode) Ctr(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", containerdSocket(n.Dir), "-n", "k8s.io"}, args...)...).CombinedOutput() //nolint:gosec // ctr with the harness's arguments
	return strings.TrimSpace(string(out)), err
}

// stopContainers kills and deletes every task and container of the node's
// containerd, so that its shims end cleanly (removing their sockets under
// /run/containerd/s) while containerd still runs.
func (n *RealNode) stopContainers(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	tasks, err := n.Ctr(ctx, "tasks", "ls", "-q")
	if err != nil {
		return
	}
	for _, id := range strings.Fields(tasks) {
		_, _ = n.Ctr(ctx, "tasks", "kill", "--all", "--signal", "SIGKILL", id)
	}
	for _, id := range strings.Fields(tasks) {
		_, _ = n.Ctr(ctx, "tasks", "delete", "--force", id)
	}
	if cs, err := n.Ctr(ctx, "containers", "ls", "-q"); err == nil {
		for _, id := range strings.Fields(cs) {
			_, _ = n.Ctr(ctx, "containers", "delete", id)
		}
	}
}

// taskIDs are the ids of the node's shim bundles: the containers containerd
// started a shim for.
func (n *RealNode) taskIDs() []string {
	dirs, _ := filepath.Glob(filepath.Join(n.Dir, "state", "io.containerd.runtime.v2.task", "k8s.io", "*"))
	ids := make([]string, 0, len(dirs))
	for _, d := range dirs {
		ids = append(ids, filepath.Base(d))
	}
	return ids
}

// shimSocket is where containerd 1.6's runc v2 shim of task id listens (its
// runtime/v2/shim.SocketAddress): a killed shim leaves it behind.
func (n *RealNode) shimSocket(id string) string {
	sum := sha256.Sum256([]byte(filepath.Join(containerdSocket(n.Dir), "k8s.io", id)))
	return filepath.Join("/run/containerd/s", hex.EncodeToString(sum[:]))
}

// strayPIDs are the processes whose working directory is under the node's
// dir: the containerd shims (they run in their bundle), which live in
// sessions of their own and survive containerd. They are found by PID and
// directory, never by name.
func (n *RealNode) strayPIDs() []int {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var pids []int
	for _, p := range procs {
		cwd, err := os.Readlink(filepath.Join(p, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, n.Dir+"/") {
			continue
		}
		if pid, err := strconv.Atoi(filepath.Base(p)); err == nil && pid > 1 && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}
