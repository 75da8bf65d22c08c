package chaos

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if prof, err = selectProfile(os.Getenv("CHAOS_PROFILE")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "metal-ccm-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err = framework.StartControlPlane(ctx, framework.Options{Dir: dir, ServiceCIDR: serviceCIDR})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start control plane: %v\n", err)
		return 1
	}
	defer cp.Stop()
	if client, err = cp.Client(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := netlab.Available(); err != nil {
		labSkip = err.Error()
	} else if lab, err = netlab.Start(netlab.Options{Nodes: 3, Speakers: 3}); err != nil {
		fmt.Fprintf(os.Stderr, "start router lab: %v\n", err)
		return 1
	}
	if lab != nil {
		defer func() {
			if err := lab.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
	}
	// The lab may have waited for another's to close: a fresh deadline.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Minute)
	defer rcancel()
	if err := registerNodes(rctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	report(os.Stdout)
	if path := os.Getenv("CHAOS_REPORT"); path != "" && code == 0 {
		if err := writeReport(path); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if code == 0 {
		_ = os.RemoveAll(dir)
	} else {
		fmt.Fprintf(os.Stderr, "logs kept in %s/logs\n", dir)
	}
	return code
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
		name := fmt.Sprintf("node%d", i)
		if _, err := client.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("register node %s: %w", name, err)
		}
		node, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("register node %s: %w", name, err)
		}
		node.Status.Addresses = []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: netlab.NodeAddr(netlab.IPv4, i).String()},
			{Type: v1.NodeInternalIP, Address: netlab.NodeAddr(netlab.IPv6, i).String()},
		}
		node.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: metav1.Now()}}
		if _, err := client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("register node %s: %w", name, err)
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
