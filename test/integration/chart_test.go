package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// chartDir is the Helm chart that deploy/'s manifests are generated from.
var chartDir = filepath.Join(framework.RepoRoot(), "deploy", "chart", "metal-ccm")

// TestChart renders the chart with the pinned Helm for the default values and
// for each documented example (examples/*.yaml), applies every rendering to
// the API server with a server-side dry run, and checks what each must keep:
// a valid cloud-config, the least-privilege roles of deploy/rbac.yaml, and
// the workload's placement and hardening.
func TestChart(t *testing.T) {
	helm := helmBinary(t)
	installPrometheusRuleCRD(t)
	wantRules := clusterRoleRules(t, readFile(t, filepath.Join(framework.RepoRoot(), "deploy", "rbac.yaml")))
	wantAgentRules := clusterRoleRules(t, readFile(t, filepath.Join(framework.RepoRoot(), "deploy", "node-agent", "agent.yaml")))
	examples, err := filepath.Glob(filepath.Join(chartDir, "examples", "*.yaml"))
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples in %s/examples: %v", chartDir, err)
	}
	for _, values := range append([]string{""}, examples...) {
		name := strings.TrimSuffix(filepath.Base(values), ".yaml")
		if values == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "metal-ccm", chartDir, "--namespace", "kube-system"}
			if values != "" {
				args = append(args, "-f", values)
			}
			out := runHelm(t, helm, args...)
			file := filepath.Join(t.TempDir(), "rendered.yaml")
			if err := os.WriteFile(file, out, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			applied, err := cp.Kubectl(ctx, "apply", "--dry-run=server", "-f", file)
			if err != nil {
				t.Fatalf("server-side dry run of the rendered chart: %v", err)
			}
			objs := decodeAll(t, out)
			if got := strings.Count(applied, "(server dry run)"); got != len(objs) {
				t.Errorf("dry run applied %d objects, the chart rendered %d:\n%s", got, len(objs), applied)
			}
			checkRendered(t, objs, wantRules, wantAgentRules)
		})
	}
}

// TestChartAlertRules parses the alert rules shipped in the chart with
// Prometheus's own rule-file parser, checks that every metric they use is
// documented in docs/metrics.md, and that the PrometheusRule template holds
// the same groups.
func TestChartAlertRules(t *testing.T) {
	data := readFile(t, filepath.Join(chartDir, "files", "alerts.yaml"))
	p := parser.NewParser(parser.Options{})
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, p)
	if len(errs) > 0 {
		t.Fatalf("files/alerts.yaml: %v", errors.Join(errs...))
	}
	docs := string(readFile(t, filepath.Join(framework.RepoRoot(), "docs", "metrics.md")))
	var alerts []string
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			expr, err := p.ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("alert %s: %v", r.Alert, err)
			}
			for _, name := range metricNames(expr) {
				if !strings.Contains(docs, "`"+name+"`") {
					t.Errorf("alert %s uses %s, which docs/metrics.md does not document", r.Alert, name)
				}
			}
		}
	}
	for _, want := range []string{"MetalCCMPoolAlmostFull", "MetalCCMBGPSessionDown", "MetalCCMConfigReloadFailing"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("files/alerts.yaml lacks the alert %s (has %v)", want, alerts)
		}
	}

	out := runHelm(t, helmBinary(t), "template", "metal-ccm", chartDir, "--set", "prometheusRule.enabled=true",
		"--show-only", "templates/prometheusrule.yaml")
	objs := decodeAll(t, out)
	if len(objs) != 1 {
		t.Fatalf("want one PrometheusRule, got %d", len(objs))
	}
	var file map[string]any
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if spec := objs[0].Object["spec"]; !reflect.DeepEqual(spec, file) {
		t.Errorf("the PrometheusRule's spec differs from files/alerts.yaml:\n%v\n%v", spec, file)
	}
}

// metricNames lists the metric names an expression selects.
func metricNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// agentName names the node agent's ServiceAccount, DaemonSet and (with
// "system:") ClusterRole.
const agentName = "metal-node-agent"

// checkRendered checks one rendering of the chart: the manager's objects,
// and the node agent's when the values enable it.
func checkRendered(t *testing.T, objs []*unstructured.Unstructured, wantRules, wantAgentRules []rbacv1.PolicyRule) {
	t.Helper()
	var configMaps, workloads, clusterRoles int
	l2 := renderedL2(t, objs)
	checkWitness(t, objs, l2)
	checkSessionsPolicy(t, objs)
	checkDaemonSetRole(t, objs)
	for _, o := range objs {
		if isAgent(o) {
			checkAgent(t, o, wantAgentRules, true)
			continue
		}
		if o.GetName() == dashboardConfigMap { // TestChartDashboardConfigMap checks it
			continue
		}
		switch o.GetKind() {
		case "ConfigMap":
			configMaps++
			var cm v1.ConfigMap
			fromUnstructured(t, o, &cm)
			if _, err := config.Parse([]byte(cm.Data["cloud-config.yaml"])); err != nil {
				t.Errorf("ConfigMap %s holds an invalid cloud-config: %v", cm.Name, err)
			}
		case "ClusterRole":
			clusterRoles++
			var cr rbacv1.ClusterRole
			fromUnstructured(t, o, &cr)
			if !reflect.DeepEqual(cr.Rules, wantRules) {
				t.Errorf("ClusterRole %s grants other rules than deploy/rbac.yaml:\n%v", cr.Name, cr.Rules)
			}
		case "DaemonSet":
			workloads++
			var ds appsv1.DaemonSet
			fromUnstructured(t, o, &ds)
			checkPodSpec(t, &ds.Spec.Template.Spec)
		case "Deployment":
			workloads++
			var d appsv1.Deployment
			fromUnstructured(t, o, &d)
			checkPodSpec(t, &d.Spec.Template.Spec)
			if d.Spec.Template.Spec.Affinity == nil || d.Spec.Template.Spec.Affinity.PodAntiAffinity == nil {
				t.Errorf("Deployment %s lacks the anti-affinity that keeps replicas on different nodes", d.Name)
			}
		}
	}
	if configMaps != 1 || workloads != 1 || clusterRoles != 1 {
		t.Errorf("want one ConfigMap, one workload and one ClusterRole; got %d, %d and %d", configMaps, workloads, clusterRoles)
	}
}

// checkWitness: the L2 witness Lease comes with L2 only: a Lease the chart
// makes, a Role that allows get and update of that name alone, and the flag
// that names it.
func checkWitness(t *testing.T, objs []*unstructured.Unstructured, l2 bool) {
	t.Helper()
	const lease = "metal-ccm-l2-witness"
	var leases, roles, flags, agents int
	for _, o := range objs {
		switch {
		case o.GetKind() == "Lease" && o.GetName() == lease:
			leases++
		case o.GetKind() == "Role" && strings.HasPrefix(o.GetName(), agentName+":l2-witness"):
			roles++
			var r rbacv1.Role
			fromUnstructured(t, o, &r)
			want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{lease}, Verbs: []string{"get", "update"}}}
			if !reflect.DeepEqual(r.Rules, want) {
				t.Errorf("Role %s grants %v, want only %v", r.Name, r.Rules, want)
			}
		case o.GetKind() == "DaemonSet" && isAgent(o):
			agents++
			var ds appsv1.DaemonSet
			fromUnstructured(t, o, &ds)
			for _, a := range ds.Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--l2-witness-lease=") && strings.HasSuffix(a, "/"+lease) {
					flags++
				}
			}
		}
	}
	want, wantFlags := 0, 0
	if l2 && agents > 0 {
		want, wantFlags = 1, agents
	}
	if leases != want || roles != want || flags != wantFlags {
		t.Errorf("L2 %v: %d witness Leases, %d agent Roles, %d --l2-witness-lease flags in %d agent DaemonSets; want %d, %d and %d",
			l2, leases, roles, flags, agents, want, want, wantFlags)
	}
}

// checkSessionsPolicy: with the agents, the Role that lets them write
// Leases (create and patch, which RBAC cannot limit to a pod's name) comes
// with the ValidatingAdmissionPolicy and its Deny binding that limit them
// to each agent's own sessions Lease (TestNodeAgentSessionsLeasePolicy
// shows what the API server refuses); without the policy the Role would
// let every node write the leader-election Leases of the namespace.
func checkSessionsPolicy(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var agents, roles, policies, bindings int
	for _, o := range objs {
		switch {
		case o.GetKind() == "DaemonSet" && isAgent(o):
			agents++
		case o.GetKind() == "Role" && o.GetName() == agentName+":sessions":
			roles++
			var r rbacv1.Role
			fromUnstructured(t, o, &r)
			want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "patch"}}}
			if !reflect.DeepEqual(r.Rules, want) {
				t.Errorf("Role %s grants %v, want only %v", r.Name, r.Rules, want)
			}
		case o.GetKind() == "ValidatingAdmissionPolicy" && o.GetName() == agentLeasePolicy:
			policies++
			var p admissionregistrationv1.ValidatingAdmissionPolicy
			fromUnstructured(t, o, &p)
			if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
				t.Errorf("policy %s: failurePolicy %v, want Fail", p.Name, p.Spec.FailurePolicy)
			}
		case o.GetKind() == "ValidatingAdmissionPolicyBinding" && o.GetName() == agentLeasePolicy:
			bindings++
			var b admissionregistrationv1.ValidatingAdmissionPolicyBinding
			fromUnstructured(t, o, &b)
			if b.Spec.PolicyName != agentLeasePolicy || !slices.Equal(b.Spec.ValidationActions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) ||
				b.Spec.MatchResources != nil {
				t.Errorf("binding %s: %+v, want policy %s with Deny, on every namespace", b.Name, b.Spec, agentLeasePolicy)
			}
		}
	}
	want := 0
	if agents > 0 {
		want = 1
	}
	if roles != want || policies != want || bindings != want {
		t.Errorf("%d agent DaemonSets: %d sessions Roles, %d policies %s and %d bindings; want %d of each", agents, roles, policies, agentLeasePolicy, bindings, want)
	}
}

// checkDaemonSetRole: each agent DaemonSet tells its agent its own name
// (--daemonset, read when the agent stops), and the agents may get those
// DaemonSets by name and nothing else.
func checkDaemonSetRole(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var names, flagged []string
	var role *rbacv1.Role
	for _, o := range objs {
		switch {
		case o.GetKind() == "Role" && o.GetName() == agentName+":daemonsets":
			role = &rbacv1.Role{}
			fromUnstructured(t, o, role)
		case o.GetKind() == "DaemonSet" && isAgent(o):
			names = append(names, o.GetName())
			var ds appsv1.DaemonSet
			fromUnstructured(t, o, &ds)
			if slices.Contains(ds.Spec.Template.Spec.Containers[0].Args, "--daemonset="+o.GetNamespace()+"/"+o.GetName()) {
				flagged = append(flagged, o.GetName())
			}
		}
	}
	if len(names) == 0 {
		if role != nil {
			t.Errorf("Role %s without an agent DaemonSet", role.Name)
		}
		return
	}
	if !slices.Equal(flagged, names) {
		t.Errorf("agent DaemonSets %v; those whose agent is told its own name (--daemonset): %v", names, flagged)
	}
	want := []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, ResourceNames: names, Verbs: []string{"get"}}}
	if role == nil || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role %s:daemonsets: %v, want exactly %v", agentName, role, want)
	}
}

// isAgent reports whether o is an object of the node agent: its
// ServiceAccount, ClusterRole and binding, or one of its DaemonSets (with
// agent.racks, one per rack: metal-node-agent-<rack>).
func isAgent(o *unstructured.Unstructured) bool {
	return o.GetName() == agentName || o.GetName() == "system:"+agentName ||
		o.GetKind() == "DaemonSet" && strings.HasPrefix(o.GetName(), agentName+"-")
}

// renderedL2 reports whether the rendered cloud-config has a pool announced
// with L2.
func renderedL2(t *testing.T, objs []*unstructured.Unstructured) bool {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "ConfigMap" {
			continue
		}
		var cm v1.ConfigMap
		fromUnstructured(t, o, &cm)
		if cfg, err := config.Parse([]byte(cm.Data["cloud-config.yaml"])); err == nil {
			for _, p := range cfg.LoadBalancer.Pools {
				if slices.Contains(p.Announce, config.ProtocolL2) {
					return true
				}
			}
		}
	}
	return false
}

// checkAgent checks an object of the node agent: read-only rules (those of
// deploy/node-agent/agent.yaml: no write of any kind, Events included), and a hardened pod on the
// node's network with its node's name, which holds no capability, or
// CAP_NET_RAW alone when netRaw (unless agent.l2 is false: whatever the
// config, as an L2 pool may be added later; an agent without one drops it).
func checkAgent(t *testing.T, o *unstructured.Unstructured, wantRules []rbacv1.PolicyRule, netRaw bool) {
	l2 := netRaw
	t.Helper()
	switch o.GetKind() {
	case "ClusterRole":
		var cr rbacv1.ClusterRole
		fromUnstructured(t, o, &cr)
		if !reflect.DeepEqual(cr.Rules, wantRules) {
			t.Errorf("ClusterRole %s grants other rules than deploy/node-agent/agent.yaml:\n%v", cr.Name, cr.Rules)
		}
		for _, r := range cr.Rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" && v != "watch" {
					t.Errorf("the agent may %s %v", v, r.Resources)
				}
			}
		}
	case "DaemonSet":
		var ds appsv1.DaemonSet
		fromUnstructured(t, o, &ds)
		spec := ds.Spec.Template.Spec
		if !spec.HostNetwork || spec.ServiceAccountName != agentName || len(spec.Containers) != 1 {
			t.Fatalf("agent DaemonSet: hostNetwork %v, serviceAccountName %q, %d containers", spec.HostNetwork, spec.ServiceAccountName, len(spec.Containers))
		}
		c := spec.Containers[0]
		sc := c.SecurityContext
		var wantAdd []v1.Capability
		if l2 {
			wantAdd = []v1.Capability{"NET_RAW"}
		}
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil ||
			!slices.Contains(sc.Capabilities.Drop, "ALL") || !slices.Equal(sc.Capabilities.Add, wantAdd) {
			t.Errorf("agent container securityContext %+v: want a read-only root filesystem and the capabilities %v (NET_RAW granted: %v)", sc, wantAdd, l2)
		}
		// The file capability of the image's agent is gained only where
		// privilege escalation is allowed: with NET_RAW, and only then.
		if sc != nil && (sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation != l2) {
			t.Errorf("agent container allowPrivilegeEscalation %v, want %v (NET_RAW granted: %v)", sc.AllowPrivilegeEscalation, l2, l2)
		}
		if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
			t.Errorf("agent pod securityContext %+v: want runAsNonRoot", psc)
		}
		// BGP passwords: only the keys the peers name, and only when the
		// agents speak BGP.
		for _, v := range spec.Volumes {
			if v.Name == "bgp-passwords" && (v.Secret == nil || len(v.Secret.Items) == 0) {
				t.Errorf("agent DaemonSet mounts every BGP password (volume %+v): want only the keys of the peers' passwordFiles", v.VolumeSource)
			}
		}
		if !slices.ContainsFunc(c.Env, func(e v1.EnvVar) bool {
			return e.Name == "NODE_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "spec.nodeName"
		}) {
			t.Errorf("agent container lacks NODE_NAME from spec.nodeName: %v", c.Env)
		}
	}
}

// checkPodSpec checks what every rendering of the workload must keep.
func checkPodSpec(t *testing.T, spec *v1.PodSpec) {
	t.Helper()
	if !spec.HostNetwork {
		t.Error("the pods must use the node's network (the BGP speaker uses the node's address)")
	}
	if spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("priorityClassName %q, want system-cluster-critical", spec.PriorityClassName)
	}
	tolerated := false
	for _, tol := range spec.Tolerations {
		tolerated = tolerated || tol.Key == "node.cloudprovider.kubernetes.io/uninitialized"
	}
	if !tolerated {
		t.Error("the pods do not tolerate node.cloudprovider.kubernetes.io/uninitialized, which only the CCM removes")
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil ||
		psc.SeccompProfile.Type != v1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want runAsNonRoot and seccomp RuntimeDefault", psc)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Errorf("container securityContext %+v: want a read-only root filesystem, no privilege escalation, all capabilities dropped", sc)
	}
	if !slices.Contains(c.Args, "--leader-elect=true") {
		t.Errorf("leader election is off: %v", c.Args)
	}
}

// helmBinary is the Helm that hack/build-helm.sh builds; the test fails, not
// skips, without it.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(framework.RepoRoot(), "_output", "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("no pinned helm at %s: run hack/build-helm.sh", bin)
	}
	return bin
}

// runHelm runs helm with its own empty cache, config and data folders.
func runHelm(t *testing.T, helm string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helm, args...) //nolint:gosec // the pinned helm
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+home+"/cache", "HELM_CONFIG_HOME="+home+"/config",
		"HELM_DATA_HOME="+home+"/data")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %v: %v: %s", args, err, errOut.String())
	}
	return out.Bytes()
}

// decodeAll splits a multi-document YAML stream into objects.
func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("decode rendered chart: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// fromUnstructured converts o into a typed object, strictly.
func fromUnstructured(t *testing.T, o *unstructured.Unstructured, into any) {
	t.Helper()
	js, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(js, into); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// clusterRoleRules reads the rules of the one ClusterRole in a manifest.
func clusterRoleRules(t *testing.T, data []byte) []rbacv1.PolicyRule {
	t.Helper()
	for _, o := range decodeAll(t, data) {
		if o.GetKind() == "ClusterRole" {
			var cr rbacv1.ClusterRole
			fromUnstructured(t, o, &cr)
			return cr.Rules
		}
	}
	t.Fatal("no ClusterRole in deploy/rbac.yaml")
	return nil
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path) //nolint:gosec // files of this repository
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// prometheusRuleCRD is the part of the Prometheus Operator's PrometheusRule
// CRD that the chart's template uses, so that the API server can dry-run it.
const prometheusRuleCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: prometheusrules.monitoring.coreos.com
spec:
  group: monitoring.coreos.com
  scope: Namespaced
  names: {kind: PrometheusRule, listKind: PrometheusRuleList, plural: prometheusrules, singular: prometheusrule}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              groups:
                type: array
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    interval: {type: string}
                    rules:
                      type: array
                      items:
                        type: object
                        required: [expr]
                        properties:
                          alert: {type: string}
                          record: {type: string}
                          expr: {x-kubernetes-int-or-string: true}
                          for: {type: string}
                          labels: {type: object, additionalProperties: {type: string}}
                          annotations: {type: object, additionalProperties: {type: string}}
`

// installPrometheusRuleCRD creates the PrometheusRule CRD and waits until
// the API server serves it.
func installPrometheusRuleCRD(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "crd.yaml")
	if err := os.WriteFile(file, []byte(prometheusRuleCRD), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Kubectl(ctx, "apply", "-f", file); err != nil {
		t.Fatal(err)
	}
	if _, err := cp.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=50s",
		"crd/prometheusrules.monitoring.coreos.com"); err != nil {
		t.Fatal(fmt.Errorf("PrometheusRule CRD: %w", err))
	}
	// Discovery in kubectl can lag the Established condition.
	for ctx.Err() == nil {
		out, err := cp.Kubectl(ctx, "api-resources", "--api-group=monitoring.coreos.com", "-o", "name")
		if err == nil && regexp.MustCompile(`(?m)^prometheusrules`).MatchString(out) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the API server does not serve PrometheusRule")
}

// TestAgentManifestsL2: the plain manifests of the node agent come in two,
// rendered from the chart: deploy/node-agent/agent.yaml and, for L2 pools,
// agent-l2.yaml with the L2 witness's Lease and its one right; both may
// have CAP_NET_RAW alone (an L2 pool added later works), both with the
// same read-only cluster-wide rules. With agent.l2 false the chart grants
// no capability.
func TestAgentManifestsL2(t *testing.T) {
	dir := filepath.Join(framework.RepoRoot(), "deploy", "node-agent")
	wantAgentRules := clusterRoleRules(t, readFile(t, filepath.Join(dir, "agent.yaml")))
	for file, l2 := range map[string]bool{"agent.yaml": false, "agent-l2.yaml": true} {
		t.Run(file, func(t *testing.T) {
			daemonSets := 0
			objs := decodeAll(t, readFile(t, filepath.Join(dir, file)))
			for _, o := range objs {
				if o.GetKind() == "DaemonSet" {
					daemonSets++
				}
				checkAgent(t, o, wantAgentRules, true)
			}
			checkWitness(t, objs, l2)
			checkSessionsPolicy(t, objs)
			checkDaemonSetRole(t, objs)
			if daemonSets != 1 {
				t.Errorf("%s: %d DaemonSets, want 1", file, daemonSets)
			}
		})
	}
	t.Run("agent.l2 false", func(t *testing.T) {
		out := runHelm(t, helmBinary(t), "template", "metal-ccm", chartDir, "--namespace", "kube-system",
			"--set", "agent.enabled=true", "--set", "agent.l2=false", "--show-only", "templates/agent.yaml")
		for _, o := range decodeAll(t, out) {
			checkAgent(t, o, wantAgentRules, false)
		}
	})
}
