package integration

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// runStatus runs `kubectl metal-ccm status ARGS` and returns its stdout,
// stderr and exit code.
func runStatus(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stdout, stderr, code, err := cp.KubectlMetalCCM(ctx, append([]string{"status"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	return stdout, stderr, code
}

// volatile are what changes from run to run: the leader's identity
// (hostname_UUID) and ages.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\S+_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<identity>"},
	{regexp.MustCompile(`renewed \S+ ago`), "renewed <age> ago"},
}

// masked is out with its volatile fields masked.
func masked(out string) []byte {
	for _, v := range volatile {
		out = v.re.ReplaceAllString(out, v.with)
	}
	return []byte(out)
}

// TestStatusCommand checks `kubectl metal-ccm status` against a running
// replica, as the chart installs it in a namespace of its own (the Lease,
// the cloud-config's ConfigMap): the leader, the pools' use, the nodes
// excluded and why, the Services pending and why, as text (golden file) and
// as JSON. test/e2e TestServiceStatus shows a replica's BGP session with a
// real router in it.
func TestStatusCommand(t *testing.T) {
	ns := framework.NamespaceName(t)
	lease := "status-command"
	// A class of its own: the Services other tests leave behind (another
	// class: none) are not this CCM's, and neither counted nor listed.
	const class = "metal-ccm.io/status-test"
	body := strings.Replace(lbConfig(194), "loadBalancer:\n", "loadBalancer:\n  class: "+class+"\n", 1) + "serviceStatus:\n  minInterval: 1s\n"
	cfg := writeConfig(t, body)
	startCCM(t, framework.CCMOptions{CloudConfig: cfg, Args: []string{"--leader-elect-resource-namespace", ns, "--leader-elect-resource-name", lease},
		Env: []string{"POD_NAMESPACE=" + ns, "POD_NAME=status-command-ccm"}})
	if got := newNamespace(t); got != ns {
		t.Fatalf("namespace %s, want %s", got, ns)
	}
	ctx := context.Background()
	if err := framework.CreateCloudConfigMap(ctx, client, ns, cfg); err != nil {
		t.Fatal(err)
	}

	registerNode(t, "status-a", true, "198.18.194.100")
	registerNode(t, "status-b", false, "198.18.194.101")
	registerNode(t, "status-c", true, "198.18.194.102")
	for _, n := range []string{"status-a", "status-b", "status-c"} {
		waitInitialized(t, n, 30*time.Second)
	}
	label, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{nodes.ExcludeLabel: ""}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, "status-c", types.MergePatchType, label, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	const wait = 30 * time.Second
	createLB(t, ns, "web", withClass(class))
	createLB(t, ns, "bad", withClass(class), framework.WithAnnotation("metal-ccm.io/pool", "nope"))
	createLB(t, ns, "small", withClass(class), framework.WithAnnotation("metal-ccm.io/pool", "tiny"))
	waitIPs(t, ns, "web", 1, wait)
	waitIPs(t, ns, "small", 1, wait)
	framework.WaitServiceCondition(t, client, ns, "web", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonNotSentToAnyPeer, wait)
	framework.WaitServiceCondition(t, client, ns, "small", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonNotSentToAnyPeer, wait)
	framework.WaitServiceCondition(t, client, ns, "bad", svcstatus.TypeAllocated, metav1.ConditionFalse, "UnknownPool", wait)

	args := []string{"-n", ns, "--lease-name", lease}
	t.Run("text", func(t *testing.T) {
		out, errOut, code := runStatus(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		golden.Compare(t, "testdata/status.golden", masked(out))
	})
	t.Run("json", func(t *testing.T) {
		out, errOut, code := runStatus(t, append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var st struct {
			Leader struct{ Expired bool }
			Pools  []struct {
				Name, Family string
				Used, Free   int
			}
			Nodes    struct{ Total, Eligible int }
			Services struct {
				Total   int
				Pending []struct{ Name, Reason string }
			}
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if st.Leader.Expired || st.Nodes.Total != 3 || st.Nodes.Eligible != 1 || st.Services.Total != 3 || len(st.Services.Pending) != 3 {
			t.Errorf("status %+v", st)
		}
		if len(st.Pools) != 3 || st.Pools[0].Used != 1 || st.Pools[2].Name != "tiny" || st.Pools[2].Used != 1 || st.Pools[2].Free != 1 {
			t.Errorf("pools %+v", st.Pools)
		}
	})
}

// TestStatusCommandNoCCM checks that without a running replica (no
// leader-election Lease, no pods) the status says so and where to look,
// and exits 1.
func TestStatusCommandNoCCM(t *testing.T) {
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	out, errOut, code := runStatus(t, "-n", ns)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	golden.Compare(t, "testdata/status-no-ccm.golden", masked(errOut))
	if !strings.Contains(errOut, "metal-ccm is not running in namespace "+ns) {
		t.Errorf("stderr %q", errOut)
	}
}
