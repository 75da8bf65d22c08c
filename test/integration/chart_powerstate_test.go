package integration

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestChartPowerStateRights renders the chart's roles with each of the
// powerState switches: each adds exactly the read rights of its source's
// resource to deploy/rbac.yaml's rules (which the defaults render, with
// all off), and the out-of-service fast path or pods' deletion exactly pods
// list and delete.
func TestChartPowerStateRights(t *testing.T) {
	helm := helmBinary(t)
	base := clusterRoleRules(t, readFile(t, filepath.Join(framework.RepoRoot(), "deploy", "rbac.yaml")))
	read := []string{"get", "list", "watch"}
	metal3 := rbacv1.PolicyRule{APIGroups: []string{"metal3.io"}, Resources: []string{"baremetalhosts"}, Verbs: read}
	rufio := rbacv1.PolicyRule{APIGroups: []string{"bmc.tinkerbell.org"}, Resources: []string{"machines"}, Verbs: read}
	fastPath := rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "delete"}}
	for _, tc := range []struct {
		name string
		set  []string
		want []rbacv1.PolicyRule
	}{
		{"both off", nil, nil},
		{"metal3", []string{"powerState.metal3.enabled=true"}, []rbacv1.PolicyRule{metal3}},
		{"rufio", []string{"powerState.rufio.enabled=true"}, []rbacv1.PolicyRule{rufio}},
		{"both", []string{"powerState.metal3.enabled=true", "powerState.rufio.enabled=true"}, []rbacv1.PolicyRule{metal3, rufio}},
		{"out-of-service fast path", []string{"powerState.outOfService.fastPath=true"}, []rbacv1.PolicyRule{fastPath}},
		{"out-of-service pods' deletion", []string{"powerState.outOfService.deletePods=true"}, []rbacv1.PolicyRule{fastPath}},
		{"both of out-of-service", []string{"powerState.outOfService.fastPath=true", "powerState.outOfService.deletePods=true"}, []rbacv1.PolicyRule{fastPath}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"template", "metal-ccm", chartDir, "--namespace", "kube-system", "--show-only", "templates/rbac.yaml"}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			got := clusterRoleRules(t, runHelm(t, helm, args...))
			want := append(append([]rbacv1.PolicyRule{}, base...), tc.want...)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ClusterRole rules with %v:\n%v\nwant deploy/rbac.yaml's and %v", tc.set, got, tc.want)
			}
		})
	}
}

// TestChartFencingRights: powerState.fencing.enabled adds a Role in
// kube-node-lease that reads Leases (get only), bound to the replicas'
// ServiceAccount, and changes nothing else; off, there is no such Role.
func TestChartFencingRights(t *testing.T) {
	helm := helmBinary(t)
	base := clusterRoleRules(t, readFile(t, filepath.Join(framework.RepoRoot(), "deploy", "rbac.yaml")))
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			out := runHelm(t, helm, "template", "metal-ccm", chartDir, "--namespace", "kube-system", "--show-only", "templates/rbac.yaml",
				"--set", fmt.Sprintf("powerState.fencing.enabled=%v", on))
			if got := clusterRoleRules(t, out); !reflect.DeepEqual(got, base) {
				t.Errorf("ClusterRole rules changed: %v", got)
			}
			var roles []rbacv1.Role
			bound := false
			for _, o := range decodeAll(t, out) {
				if o.GetNamespace() != "kube-node-lease" {
					continue
				}
				switch o.GetKind() {
				case "Role":
					var r rbacv1.Role
					fromUnstructured(t, o, &r)
					roles = append(roles, r)
				case "RoleBinding":
					var b rbacv1.RoleBinding
					fromUnstructured(t, o, &b)
					bound = len(b.Subjects) == 1 && b.Subjects[0].Kind == "ServiceAccount" && b.Subjects[0].Namespace == "kube-system"
				}
			}
			want := []rbacv1.PolicyRule{{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get"}}}
			switch {
			case !on && (len(roles) > 0 || bound):
				t.Errorf("fencing off: Roles in kube-node-lease %v, bound %v", roles, bound)
			case on && (len(roles) != 1 || !reflect.DeepEqual(roles[0].Rules, want) || !bound):
				t.Errorf("fencing on: Roles in kube-node-lease %v, bound %v; want one with %v, bound to the replicas", roles, bound, want)
			}
		})
	}
}
