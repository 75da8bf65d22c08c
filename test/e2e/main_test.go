// Package e2e tests LoadBalancer Services end to end: the real control plane,
// CCM replicas with their embedded BGP speakers, and a real BIRD router in
// network namespaces (test/netlab). It needs root; without it every test
// skips and says why.
package e2e

import (
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
	os.Exit(framework.RunTests(m, "e2e", framework.Options{}, netlab.Available, func(c *framework.ControlPlane, cs kubernetes.Interface) {
		cp, client = c, cs
	}))
}
