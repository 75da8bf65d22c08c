package main

import (
	"os/exec"
	"strings"
	"testing"
)

// forbidden are packages (and everything under them) the node agent must
// not link. The agent runs on every node, and its RSS counts the pages of
// its executable that it touches: client-go's clientset, its typed clients
// (even one registers every API group) and informer factory, the
// cloud-provider libraries and the manager's own packages made it twice
// its size (docs/performance.md, scenario 0b). pkg/agent's client reads
// the three resources it needs without them. A BGP library's server (with
// gRPC and its configuration libraries) kept it over 40 MiB: the speaker
// runs its own sessions (pkg/bgp/session).
var forbidden = []string{
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/informers",
	"k8s.io/client-go/applyconfigurations",
	"k8s.io/client-go/openapi",
	"k8s.io/client-go/discovery",
	"k8s.io/client-go/tools/record",
	"k8s.io/cloud-provider",
	"k8s.io/controller-manager",
	"k8s.io/component-base/logs/json",
	"github.com/metal-ccm/metal-ccm/pkg/metal",
	"github.com/metal-ccm/metal-ccm/pkg/replica",
	"github.com/metal-ccm/metal-ccm/pkg/lbcontroller",
	"github.com/metal-ccm/metal-ccm/pkg/powerstate",
	"github.com/metal-ccm/metal-ccm/pkg/outofservice",
	"github.com/metal-ccm/metal-ccm/pkg/fencing",
	"github.com/metal-ccm/metal-ccm/pkg/csrapproval",
	"github.com/osrg/gobgp",
	"google.golang.org/grpc",
}

// TestDeps fails when the agent links a forbidden package, and names the
// path that brings it in.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}:{{join .Imports \" \"}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	imports := map[string][]string{}
	var all []string
	for line := range strings.Lines(string(out)) {
		pkg, deps, _ := strings.Cut(strings.TrimSpace(line), ":")
		imports[pkg] = strings.Fields(deps)
		all = append(all, pkg)
	}
	if len(all) < 100 {
		t.Fatalf("go list -deps listed %d packages, want the agent's (hundreds)", len(all))
	}
	for _, pkg := range all {
		for _, f := range forbidden {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				t.Errorf("the node agent links %s (forbidden: %s), through %s", pkg, f, strings.Join(importPath(imports, pkg), " -> "))
			}
		}
	}
}

// TestForbiddenMatches checks that TestDeps's rule catches what it
// should: the manager's command links some of the forbidden packages.
func TestForbiddenMatches(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../metal-cloud-controller-manager").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, want := range []string{"k8s.io/client-go/kubernetes", "k8s.io/cloud-provider"} {
		if !strings.Contains(string(out), "\n"+want+"\n") {
			t.Errorf("the manager does not link %s: is the rule still about real packages?", want)
		}
	}
}

// importPath is the shortest chain of imports from the main package to
// pkg.
func importPath(imports map[string][]string, pkg string) []string {
	const root = "github.com/metal-ccm/metal-ccm/cmd/metal-node-agent"
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == pkg {
			var path []string
			for ; p != ""; p = prev[p] {
				path = append([]string{p}, path...)
			}
			return path
		}
		for _, d := range imports[p] {
			if _, seen := prev[d]; !seen {
				prev[d] = p
				queue = append(queue, d)
			}
		}
	}
	return []string{"?"}
}
