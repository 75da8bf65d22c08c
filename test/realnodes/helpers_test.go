package realnodes

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/images"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// testImages builds the pause and echo images as OCI archives in a
// temporary folder: the archives (for RealNodeOptions.Images) and the pause
// image's reference (RealNodeOptions.SandboxImage).
func testImages(t *testing.T) (archives []string, pauseRef string) {
	t.Helper()
	archives, pauseRef, err := images.BuildNodeImages(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return archives, pauseRef
}

// writeConfig writes a cloud-config into the test's temporary folder.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cloud-config.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitVIPs waits until the Service has n addresses.
func waitVIPs(t *testing.T, ns, name string, n int) []netip.Addr {
	t.Helper()
	var out []netip.Addr
	for _, ip := range framework.WaitIngressIPs(t, client, ns, name, n, 30*time.Second) {
		out = append(out, netip.MustParseAddr(ip))
	}
	return out
}

// defaultServiceAccount creates the namespace's default ServiceAccount when
// no controller has (pods need one to be admitted).
func defaultServiceAccount(t *testing.T, ns string) {
	t.Helper()
	_, err := client.CoreV1().ServiceAccounts(ns).Create(context.Background(),
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// labNodeIPs are node i's addresses, IPv4 first.
func labNodeIPs(lab *netlab.Lab, i int) []string {
	return []string{lab.NodeAddrs(netlab.IPv4)[i].String(), lab.NodeAddrs(netlab.IPv6)[i].String()}
}

// echoReply is what the echo image answers.
type echoReply struct{ Pod, Node, PodIP, Client string }

// getEcho GETs url from node n's namespace and decodes the echo reply.
func getEcho(ctx context.Context, n *framework.RealNode, url string) (echoReply, error) {
	var r echoReply
	body, err := n.Get(ctx, url)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return r, fmt.Errorf("%s answered %q: %w", url, body, err)
	}
	return r, nil
}

// clientEcho GETs the address from the lab's client and decodes the reply.
func clientEcho(ctx context.Context, lab *netlab.Lab, vip netip.Addr) (echoReply, error) {
	var r echoReply
	body, err := lab.ClientGet(ctx, netlab.VIPURL(vip))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return r, fmt.Errorf("%s answered %q: %w", vip, body, err)
	}
	return r, nil
}

// waitAnswers waits until the address answers the client ten times in a
// row: each node's kube-proxy programs a Service on its own sync, and until
// every one has, a connection the router sends to a node that has not yet
// is refused there.
func waitAnswers(t *testing.T, lab *netlab.Lab, vip netip.Addr) {
	t.Helper()
	start := time.Now()
	inARow := 0
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if _, err := clientEcho(ctx, lab, vip); err != nil {
			inARow = 0
			return false, nil //nolint:nilerr // retried until ten answers in a row
		}
		inARow++
		return inARow >= 10, nil
	})
	if err != nil {
		t.Fatalf("%s does not answer the client ten times in a row: %v", vip, err)
	}
	t.Logf("%s answered ten times in a row after %.1fs", vip, time.Since(start).Seconds())
}

// statusFrom is the HTTP status of a GET of url from node n's namespace
// (0 if there is no answer).
func statusFrom(ctx context.Context, n *framework.RealNode, url string) int {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return framework.DialInNetNS(ctx, n.NetNS, network, addr)
		},
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// echoDeployment runs replicas of the echo image labelled app=name, spread
// over the nodes (at most one more on any node than on another), only on
// onNodes when given.
func echoDeployment(name string, replicas int32, onNodes []string) *appsv1.Deployment {
	env := func(name, path string) v1.EnvVar {
		return v1.EnvVar{Name: name, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: path}}}
	}
	labels := map[string]string{"app": name}
	spec := v1.PodSpec{
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](0),
		TopologySpreadConstraints: []v1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
		}},
		Containers: []v1.Container{{
			Name:            "echo",
			Image:           images.Ref("echo"),
			ImagePullPolicy: v1.PullNever,
			Ports:           []v1.ContainerPort{{ContainerPort: 8080}},
			Env:             []v1.EnvVar{env("POD_NAME", "metadata.name"), env("NODE_NAME", "spec.nodeName"), env("POD_IP", "status.podIP")},
			ReadinessProbe: &v1.Probe{PeriodSeconds: 1, ProbeHandler: v1.ProbeHandler{
				HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)},
			}},
		}},
	}
	if len(onNodes) > 0 {
		spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{
			NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{{
				Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: onNodes,
			}}}},
		}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

func createDeployment(t *testing.T, ns string, d *appsv1.Deployment) {
	t.Helper()
	if _, err := client.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPods waits until n pods labelled app=name run and are Ready, with an
// address of each family, and returns them.
func waitPods(t *testing.T, ns, name string, n int) []v1.Pod {
	t.Helper()
	var pods []v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && podReady(&p) && len(p.Status.PodIPs) == 2 {
				pods = append(pods, p)
			}
		}
		return len(pods) == n, nil
	})
	if err != nil {
		l, _ := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
		var states []string
		if l != nil {
			for _, p := range l.Items {
				states = append(states, fmt.Sprintf("%s on %q: %s %v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions))
			}
		}
		t.Fatalf("%d Ready pods app=%s: %v; pods: %v", n, name, err, states)
	}
	return pods
}

func podReady(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && slices.ContainsFunc(p.Status.Conditions, func(c v1.PodCondition) bool {
		return c.Type == v1.PodReady && c.Status == v1.ConditionTrue
	})
}

// podIP is the pod's address of family f ("" if none).
func podIP(p v1.Pod, f v1.IPFamily) string {
	for _, a := range p.Status.PodIPs {
		if addr, err := netip.ParseAddr(a.IP); err == nil && addr.Is6() == (f == v1.IPv6Protocol) {
			return a.IP
		}
	}
	return ""
}

// deletePods deletes every pod of ns at once.
func deletePods(ns string) {
	_ = client.CoreV1().Pods(ns).DeleteCollection(context.Background(),
		metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, metav1.ListOptions{})
}

// withTargetPort sends the Service's port to targetPort of the pods.
func withTargetPort(port int32) framework.ServiceOption {
	return func(s *v1.Service) {
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].TargetPort = intstr.FromInt32(port)
		}
	}
}

// waitNode waits until the node satisfies ok, and returns it.
func waitNode(t *testing.T, name string, timeout time.Duration, ok func(*v1.Node) bool) *v1.Node {
	t.Helper()
	return framework.WaitNode(t, client, name, timeout, ok)
}

func nodeReady(n *v1.Node) bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c v1.NodeCondition) bool {
		return c.Type == v1.NodeReady && c.Status == v1.ConditionTrue
	})
}

func hasTaint(n *v1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}

// nodeIndex is the index of the node named name.
func nodeIndex(nodes []*framework.RealNode, name string) int {
	return slices.IndexFunc(nodes, func(n *framework.RealNode) bool { return n.Name == name })
}
