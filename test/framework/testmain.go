package framework

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
)

// Suite is a test package that shares one control plane (RunSuite).
type Suite struct {
	// Prefix names the temporary folder.
	Prefix string
	// Options configure the control plane; Dir is set by RunSuite.
	Options Options
	// Skip, when it returns a reason, runs the tests without a control
	// plane (they skip themselves).
	Skip func() error
	// Setup runs once the control plane is ready, before the tests. An
	// error ends the run with exit code 1. The teardown it returns, if any,
	// runs after the tests with their exit code and returns the final one.
	Setup func(*ControlPlane, kubernetes.Interface) (teardown func(code int) int, err error)
}

// RunSuite is the TestMain of a test package that shares one control plane:
// it starts one in a temporary folder (named after s.Prefix), runs s.Setup
// and the tests, and stops it. The folder is removed when every test passed
// and kept, with the logs, otherwise.
func RunSuite(m *testing.M, s Suite) int {
	if s.Skip != nil {
		if err := s.Skip(); err != nil {
			fmt.Printf("%s: every test skips: %v\n", s.Prefix, err)
			return m.Run()
		}
	}
	dir, err := os.MkdirTemp("", "metal-ccm-"+s.Prefix+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts := s.Options
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
	var teardown func(int) int
	if s.Setup != nil {
		if teardown, err = s.Setup(cp, client); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\nlogs kept in %s/logs\n", s.Prefix, err, dir)
			return 1
		}
	}
	code := m.Run()
	if teardown != nil {
		code = teardown(code)
	}
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s/logs\n", dir)
	}
	return code
}

// RunTests is RunSuite for a package whose setup only keeps the control
// plane and its admin client (use).
func RunTests(m *testing.M, prefix string, opts Options, skip func() error, use func(*ControlPlane, kubernetes.Interface)) int {
	return RunSuite(m, Suite{Prefix: prefix, Options: opts, Skip: skip,
		Setup: func(cp *ControlPlane, cs kubernetes.Interface) (func(int) int, error) {
			use(cp, cs)
			return nil, nil
		}})
}
