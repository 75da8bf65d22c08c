package chaos

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
)

// ownPlane is a control plane for real nodes, the test's own: real nodes
// need kube-controller-manager's node-lifecycle controller and
// kube-scheduler, which the suite's control plane lacks on purpose (its
// registered nodes have no kubelet and would turn NotReady under it).
type ownPlane struct {
	cp     *framework.ControlPlane
	client kubernetes.Interface
	// archives and pauseRef are the nodes' images.
	archives []string
	pauseRef string
}

// startOwnPlane starts an ownPlane in a folder named after name, kept
// when the test fails; the test's cleanup stops it.
func startOwnPlane(t *testing.T, name string) *ownPlane {
	t.Helper()
	dir, err := os.MkdirTemp("", "metal-ccm-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s control plane, CCM and node files kept in %s", name, dir)
		} else {
			_ = os.RemoveAll(dir)
		}
	})
	o := &ownPlane{}
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if o.cp, err = framework.StartControlPlane(cctx, framework.Options{Dir: dir, RealNodes: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.cp.Stop)
	if o.client, err = o.cp.Client(); err != nil {
		t.Fatal(err)
	}
	if o.archives, o.pauseRef, err = images.BuildNodeImages(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return o
}
