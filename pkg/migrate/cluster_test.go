package migrate_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/metallb"
)

// TestReadCluster lists MetalLB's resources with the dynamic client: the
// objects of the namespace, each kind, decoded as from a file.
func TestReadCluster(t *testing.T) {
	obj := func(version, kind, ns, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(metallb.Group + "/" + version)
		u.SetKind(kind)
		u.SetNamespace(ns)
		u.SetName(name)
		return u
	}
	listKinds := map[schema.GroupVersionResource]string{}
	for _, r := range metallb.Resources {
		for _, v := range r.Versions {
			listKinds[schema.GroupVersionResource{Group: r.Group, Version: v, Resource: r.Resource}] = "List"
		}
	}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds,
		obj("v1beta1", metallb.KindIPAddressPool, metallb.DefaultNamespace, "public"),
		obj("v1beta2", metallb.KindBGPPeer, metallb.DefaultNamespace, "tor1"),
		obj("v1beta1", metallb.KindIPAddressPool, "elsewhere", "other"),
	)
	for _, tc := range []struct {
		name      string
		namespace string
		want      []string
	}{
		{name: "metallb-system", namespace: metallb.DefaultNamespace, want: []string{"IPAddressPool metallb-system/public", "BGPPeer metallb-system/tor1"}},
		{name: "all namespaces", namespace: "", want: []string{"IPAddressPool elsewhere/other", "IPAddressPool metallb-system/public", "BGPPeer metallb-system/tor1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := migrate.ReadCluster(t.Context(), client, tc.namespace, metallb.Resources)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for i := range objs {
				got = append(got, objs[i].Ref())
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}
