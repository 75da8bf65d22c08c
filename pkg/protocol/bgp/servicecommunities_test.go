package bgp

import (
	"errors"
	"net/netip"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

func TestServiceCommunities(t *testing.T) {
	cfg, err := config.Parse([]byte(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
loadBalancer:
  pools:
  - name: public
    addresses: [198.18.40.0/24]
    serviceCommunities: ["65000:200", no-export, "64512:9:9"]
  - name: plain
    addresses: [198.18.41.0/24]
`))
	if err != nil {
		t.Fatal(err)
	}
	public, plain, outside := netip.MustParseAddr("198.18.40.1"), netip.MustParseAddr("198.18.41.1"), netip.MustParseAddr("198.18.42.1")
	for _, tc := range []struct {
		name, annotation string
		addr             netip.Addr
		want             string
		wantErr          error
	}{
		{name: "none", addr: public, want: ""},
		{name: "allowed", annotation: "64512:9:9, NO-EXPORT", addr: public, want: "no-export,64512:9:9"},
		{name: "one not allowed", annotation: "65000:200,65000:999", addr: public, wantErr: ErrCommunityNotAllowed},
		{name: "pool allows none", annotation: "65000:200", addr: plain, wantErr: ErrCommunityNotAllowed},
		{name: "in no pool", annotation: "65000:200", addr: outside, wantErr: ErrCommunityNotAllowed},
		{name: "unreadable", annotation: "65000:200,oops", addr: public, wantErr: community.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{string(annotation.NameBGPCommunities): tc.annotation}}}
			got, err := ServiceCommunities(&cfg.LoadBalancer, svc, tc.addr)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !got.Empty() {
					t.Fatalf("= %q, %v; want none and an error wrapping %v", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("= %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
