package chaos

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

// Shared by the tests of this package, which run one after another.
var (
	cp     *framework.ControlPlane
	client kubernetes.Interface
	// lab is the router lab, or nil when it cannot run here (labSkip says why).
	lab     *netlab.Lab
	labSkip string
	prof    profile
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(rogueEnv); spec != "" {
		os.Exit(rogueMain(spec)) // this binary run again as a rogue member
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if prof, err = selectProfile(os.Getenv("CHAOS_PROFILE")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return framework.RunSuite(m, framework.Suite{Prefix: "chaos", Options: framework.Options{ServiceCIDR: serviceCIDR}, Setup: setupSuite})
}

// setupSuite starts the router lab (when it can run here) and registers the
// nodes; its teardown prints the report, writes it to $CHAOS_REPORT when
// every test passed, and closes the lab.
func setupSuite(c *framework.ControlPlane, cs kubernetes.Interface) (func(int) int, error) {
	cp, client = c, cs
	if err := netlab.Available(); err != nil {
		labSkip = err.Error()
	} else if lab, err = netlab.Start(netlab.Options{Nodes: 3, Speakers: 3}); err != nil {
		return nil, fmt.Errorf("start router lab: %w", err)
	}
	closeLab := func() {
		if lab != nil {
			if err := lab.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}
	}
	// The lab may have waited for another's to close: a fresh deadline.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if err := registerNodes(rctx); err != nil {
		closeLab()
		return nil, err
	}
	return func(code int) int {
		report(os.Stdout)
		if path := os.Getenv("CHAOS_REPORT"); path != "" && code == 0 {
			if err := writeReport(path); err != nil {
				fmt.Fprintln(os.Stderr, err)
				code = 1
			}
		}
		closeLab()
		return code
	}, nil
}

// serviceCIDR has room for the storms' cluster IPs (the framework's default
// /24 has 254).
const serviceCIDR = "198.18.208.0/20,2001:db8:200::/112"

// nodeCount is the number of nodes, the lab's or (without the lab) the same
// names and addresses with no namespace behind them.
const nodeCount = 3

// registerNodes registers Ready, initialized nodes with the lab's node
// addresses: the next hops of every announcement.
func registerNodes(ctx context.Context) error {
	for i := range nodeCount {
		if _, err := framework.CreateReadyNode(ctx, client, fmt.Sprintf("node%d", i),
			netlab.NodeAddr(netlab.IPv4, i).String(), netlab.NodeAddr(netlab.IPv6, i).String()); err != nil {
			return err
		}
	}
	return nil
}

// needLab skips the part of a test that needs the router lab, saying why.
func needLab(t *testing.T) {
	t.Helper()
	if lab == nil {
		t.Skipf("skipping the router part: %s", labSkip)
	}
}
