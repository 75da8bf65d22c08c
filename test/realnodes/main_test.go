// Package realnodes tests the CCM with real nodes: in each node namespace of
// a lab (test/netlab), containerd, a kubelet started with
// --cloud-provider=external and kube-proxy (test/framework StartRealNode),
// with kube-scheduler and kube-controller-manager's node-lifecycle
// controller running as in a real cluster. It needs root and the packages of
// hack/install-deps.sh; without them every test skips and says why.
package realnodes

import (
	"errors"
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

var (
	cp     *framework.ControlPlane
	client kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunTests(m, "realnodes", framework.Options{RealNodes: true},
		func() error { return errors.Join(netlab.Available(), framework.RealNodesAvailable()) },
		func(c *framework.ControlPlane, cs kubernetes.Interface) { cp, client = c, cs }))
}
