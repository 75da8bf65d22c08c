// Package integration tests the CCM against the real kube-apiserver and etcd
// (built by hack/build.sh into _output/bin), with RBAC on.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "metal-ccm-integration-")
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
	client, err = cp.Client()
	if err != nil {
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
