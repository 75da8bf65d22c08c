package framework

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// RunTests is the TestMain of a test package that shares one control plane:
// it starts one in a temporary folder (named after prefix), hands it to use,
// runs the tests and stops it. The folder is removed when every test passed
// and kept, with the logs, otherwise. When skip returns a reason, no control
// plane is started and the tests run without one (they skip themselves).
func RunTests(m *testing.M, prefix string, opts Options, skip func() error, use func(*ControlPlane, kubernetes.Interface)) int {
	if skip != nil {
		if err := skip(); err != nil {
			fmt.Printf("%s: every test skips: %v\n", prefix, err)
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "metal-ccm-"+prefix+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts.Dir = dir
	cp, err := StartControlPlane(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "start control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	client, err := cp.Client()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	use(cp, client)
	code := m.Run()
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s/logs\n", dir)
	}
	return code
}
