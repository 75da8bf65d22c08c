// Package integration tests the CCM against the real kube-apiserver and etcd
// (built by hack/build.sh into _output/bin), with RBAC on.
package integration

import (
	"os"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// cp is the control plane the tests of this package share; each test uses
// node names, lease names and namespaces of its own.
var (
	cp     *framework.ControlPlane
	client kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(framework.RunTests(m, "integration", framework.Options{}, nil, func(c *framework.ControlPlane, cs kubernetes.Interface) {
		cp, client = c, cs
	}))
}
