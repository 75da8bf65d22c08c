package framework

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The CRDs of test/framework/testdata: minimal copies (group, version, kind,
// plural, scope and a status subresource as published) of the resources the
// power-state sources and the migrate converter read.
const (
	BareMetalHostCRD = "baremetalhost-crd.yaml"
	RufioMachineCRD  = "rufio-machine-crd.yaml"
	// MetalLBCRDs holds MetalLB's six CRDs, for the migrate converter.
	MetalLBCRDs = "metallb-crds.yaml"
)

// InstallCRD applies testdata/file, a CRD named name
// (plural.group), and waits until the API server serves its resource. A
// CRD already installed (by another test) is applied again unchanged.
func (cp *ControlPlane) InstallCRD(t testing.TB, file, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(RepoRoot(), "test", "framework", "testdata", file)
	if _, err := cp.Kubectl(ctx, "apply", "-f", path); err != nil {
		t.Fatalf("CRD %s: %v", name, err)
	}
	if _, err := cp.Kubectl(ctx, "wait", "--for=condition=Established", "--timeout=50s", "crd/"+name); err != nil {
		t.Fatalf("CRD %s: %v", name, err)
	}
	plural, group, _ := strings.Cut(name, ".")
	// Discovery can lag the Established condition.
	for ctx.Err() == nil {
		out, err := cp.Kubectl(ctx, "api-resources", "--api-group="+group, "-o", "name")
		if err == nil && strings.Contains(out, plural+"."+group) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal(fmt.Errorf("the API server does not serve %s", name))
}
