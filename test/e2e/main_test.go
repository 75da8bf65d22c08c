// Package e2e tests LoadBalancer Services end to end: the real control plane,
// CCM replicas with their embedded BGP speakers, and a real BIRD router in
// network namespaces (test/netlab). It needs root; without it every test
// skips and says why.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

var (
	cp     *framework.ControlPlane
	client kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := netlab.Available(); err != nil {
		fmt.Printf("e2e: every test skips: %v\n", err)
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "metal-ccm-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err = framework.StartControlPlane(ctx, framework.Options{Dir: dir})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	if client, err = cp.Client(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s/logs\n", dir)
	}
	return code
}
