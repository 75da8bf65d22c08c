package realnodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/internal/imagebuild"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// registryPort is the lab registry's port, on the host's speaker address.
const registryPort = 5000

// release is what `make push` pushed to the lab's registry.
type release struct {
	Version string // VERSION
	Image   string // REGISTRY/REPOSITORY, the chart's image.repository
	Digest  string // the image index's digest, sha256:...
	Chart   string // oci://REGISTRY/PATH/metal-ccm, for helm install --version Version
}

// pushRelease starts a real registry (Distribution) on the host's speaker
// address of the lab, which the nodes reach over the node segment, and
// pushes the release there as `make push IMAGE=...` does (hack/push.sh):
// the image for this machine's platform only (the release builds
// linux/amd64 and linux/arm64: make release-check; one keeps the test
// short) and the chart, which defaults to that image. The registry speaks
// plain HTTP: PLAIN_HTTP=1 for the push, RealNodeOptions.Registries for the
// nodes' containerd.
func pushRelease(t *testing.T, lab *netlab.Lab) (*framework.Registry, release) {
	t.Helper()
	reg := framework.StartRegistry(t, netip.AddrPortFrom(lab.SpeakerAddrs(netlab.IPv4)[0], registryPort))
	v, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	rel := release{
		Version: strings.TrimSpace(string(v)),
		Image:   reg.Addr.String() + "/metal-ccm/metal-cloud-controller-manager",
		Chart:   "oci://" + reg.Addr.String() + "/metal-ccm/charts/metal-ccm",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(framework.RepoRoot(), "hack", "push.sh")) //nolint:gosec // this repository's script
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "IMAGE="+rel.Image, "PLAIN_HTTP=1", "PLATFORMS=linux/"+runtime.GOARCH,
		"OUTPUT="+filepath.Join(home, "output"),
		// Helm's and the image push's credentials: none, in folders of the test's.
		"HELM_CACHE_HOME="+filepath.Join(home, "helm-cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "helm-config"),
		"HELM_DATA_HOME="+filepath.Join(home, "helm-data"), "DOCKER_CONFIG="+filepath.Join(home, "docker"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/push.sh IMAGE=%s: %v\n%s", rel.Image, err, out.String())
	}
	m := regexp.MustCompile(`pushed ` + regexp.QuoteMeta(rel.Image+":"+rel.Version) + `@(sha256:[0-9a-f]{64})`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("hack/push.sh did not say what it pushed:\n%s", out.String())
	}
	rel.Digest = m[1]
	if !strings.Contains(out.String(), "Pushed: "+strings.TrimPrefix(rel.Chart, "oci://")+":"+rel.Version) {
		t.Fatalf("hack/push.sh did not push the chart %s:%s:\n%s", rel.Chart, rel.Version, out.String())
	}
	t.Logf("make push to the lab's registry %s (PID %d) in %.1fs: %s:%s@%s and %s %s",
		reg.Addr, reg.PID(), time.Since(start).Seconds(), rel.Image, rel.Version, rel.Digest, rel.Chart, rel.Version)
	return reg, rel
}

// checkRelease checks the CCM pod against the release: it runs the image
// that the node's containerd pulled from the registry (the pushed digest),
// labelled with the version, and says the version in its log; the binaries
// that containerd unpacked print it with --version, and the agent holds
// its file capability.
func checkRelease(t *testing.T, n *framework.RealNode, p *v1.Pod, rel release) {
	t.Helper()
	c := p.Spec.Containers[0]
	if want := rel.Image + ":" + rel.Version; c.Image != want || c.ImagePullPolicy != v1.PullIfNotPresent {
		t.Errorf("container image %s (pull policy %s), want %s (IfNotPresent)", c.Image, c.ImagePullPolicy, want)
	}
	if len(p.Status.ContainerStatuses) != 1 || !strings.HasSuffix(p.Status.ContainerStatuses[0].ImageID, "@"+rel.Digest) {
		t.Errorf("container statuses %+v: want the image ID ...@%s, the pushed index", p.Status.ContainerStatuses, rel.Digest)
	}
	if got := p.Labels["app.kubernetes.io/version"]; got != rel.Version {
		t.Errorf("pod label app.kubernetes.io/version %q, want %s", got, rel.Version)
	}
	if out, err := n.Ctr(context.Background(), "images", "ls", "-q"); err != nil || !strings.Contains(out, rel.Image+":"+rel.Version) {
		t.Errorf("node %s's containerd has no image %s:%s (%v): %s", n.Name, rel.Image, rel.Version, err, out)
	}
	want := fmt.Sprintf(`"Starting" version=%q`, rel.Version)
	if !podLogContains(t, n, p, chartName, want) {
		t.Errorf("the CCM's log has no %s", want)
	}
	for _, bin := range []string{chartName, "metal-node-agent"} {
		path := unpackedBinaries(t, n, bin)[0]
		out, err := exec.Command(path, "--version").CombinedOutput() //nolint:gosec // the binary the node unpacked
		if err != nil || !strings.HasPrefix(string(out), bin+" "+rel.Version+" (revision ") {
			t.Errorf("%s --version: %q, %v; want %s %s (revision ...)", path, out, err, bin, rel.Version)
		}
		t.Logf("%s --version (as the node unpacked it): %s", bin, strings.TrimSpace(string(out)))
	}
	want = imagebuild.CapNetRawPermitted()["security.capability"]
	for _, agent := range unpackedBinaries(t, n, "metal-node-agent") {
		buf := make([]byte, 64)
		sz, err := unix.Getxattr(agent, "security.capability", buf)
		if err != nil || string(buf[:max(sz, 0)]) != want {
			t.Errorf("%s: security.capability %x (%v), want %x (cap_net_raw=p)", agent, buf[:max(sz, 0)], err, want)
		}
	}
}

// unpackedBinaries are the paths of /usr/local/bin/NAME in the node's
// native snapshots: the image's files as containerd unpacked them, in the
// layer's snapshot and in each copy made for a container's root.
func unpackedBinaries(t *testing.T, n *framework.RealNode, name string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(n.Dir, "root", "io.containerd.snapshotter.v1.native", "snapshots", "*", "usr", "local", "bin", name))
	if err != nil || len(m) == 0 {
		t.Fatalf("node %s: no %s in the snapshots: %v", n.Name, name, err)
	}
	return m
}

// podLogContains says whether a container's log, as the node's kubelet
// wrote it, has s.
func podLogContains(t *testing.T, n *framework.RealNode, p *v1.Pod, container, s string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(n.PodLogsDir(), p.Namespace+"_"+p.Name+"_"+string(p.UID), container, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no log of container %s under %s: %v", container, n.PodLogsDir(), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // the node's pod logs
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if strings.Contains(string(b), s) {
			return true
		}
	}
	return false
}
