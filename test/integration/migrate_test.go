package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/kubevip"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/metallb"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestMigrateFromCluster reads the converters' examples back from the real
// API server, as migrate --kubeconfig does (MetalLB's objects through
// their CRDs, BGPPeer in v1beta2, with the dynamic client), and gets the
// same config and report as from the files: the golden files.
func TestMigrateFromCluster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, r := range metallb.Resources {
		cp.InstallCRD(t, framework.MetalLBCRDs, r.Resource+"."+r.Group)
	}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: metallb.DefaultNamespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	dyn := dynamicClient(t)
	testdata := filepath.Join(framework.RepoRoot(), "pkg", "migrate")
	for _, tc := range []struct {
		name    string
		example string
		read    func() ([]migrate.Object, error)
		convert golden.Converter
	}{
		{name: "metallb", example: filepath.Join(testdata, "metallb", "testdata", "example"),
			read: func() ([]migrate.Object, error) {
				return migrate.ReadCluster(ctx, dyn, metallb.DefaultNamespace, metallb.Resources)
			},
			convert: func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
				return metallb.Convert(objs, metallb.Options{MemberlistPort: 7947})
			}},
		{name: "kube-vip", example: filepath.Join(testdata, "kubevip", "testdata", "example"),
			read: func() ([]migrate.Object, error) {
				return migrate.ReadNamed(ctx, dyn, kubevip.DefaultNamespace, kubevip.DefaultName, kubevip.ConfigMaps)
			},
			convert: func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
				return kubevip.Convert(objs, kubevip.Options{})
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := cp.Kubectl(ctx, "apply", "-f", tc.example+".yaml"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = cp.Kubectl(context.Background(), "delete", "-f", tc.example+".yaml") })
			objs, err := tc.read()
			if err != nil {
				t.Fatal(err)
			}
			cfg, rep, err := tc.convert(objs)
			if err != nil {
				t.Fatal(err)
			}
			out, err := migrate.Render(cfg, "")
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			var report bytes.Buffer
			if err := rep.Write(&report); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, tc.example+golden.ConfigSuffix, out)
			golden.Compare(t, tc.example+golden.ReportSuffix, report.Bytes())
		})
	}
}
