package metal

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
)

func annotated(spec v1.ServiceSpec, kv ...string) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc", Annotations: map[string]string{}}, Spec: spec}
	for i := 0; i+1 < len(kv); i += 2 {
		svc.Annotations[kv[i]] = kv[i+1]
	}
	return svc
}

// TestAnnotationsDeclared: every annotation name is declared once, with
// everything the reference shows, and its example reads.
func TestAnnotationsDeclared(t *testing.T) {
	var names []annotation.Key
	for _, d := range annotation.All() {
		names = append(names, d.Name)
		if d.Type == "" || d.Default == "" || d.Example == "" || d.Meaning == "" {
			t.Errorf("%s: incomplete declaration %+v", d.Name, d)
		}
	}
	want := []annotation.Key{annotation.NameBGPCommunities, annotation.NameLoadBalancerIPs, annotation.NamePool, annotation.NameSharingKey}
	if !slices.Equal(names, want) {
		t.Errorf("annotation.All() = %v, want %v", names, want)
	}
	for _, tc := range []struct {
		name  annotation.Key
		parse func(*v1.Service) error
	}{
		{annotation.LoadBalancerIPs.Name(), func(s *v1.Service) error { _, _, err := annotation.LoadBalancerIPs.Parse(s); return err }},
		{annotation.Pool.Name(), func(s *v1.Service) error { _, _, err := annotation.Pool.Parse(s); return err }},
		{annotation.BGPCommunities.Name(), func(s *v1.Service) error { _, _, err := annotation.BGPCommunities.Parse(s); return err }},
		{annotation.SharingKey.Name(), func(s *v1.Service) error { _, _, err := annotation.SharingKey.Parse(s); return err }},
	} {
		t.Run(string(tc.name), func(t *testing.T) {
			i := slices.IndexFunc(annotation.All(), func(d annotation.Doc) bool { return d.Name == tc.name })
			if i < 0 {
				t.Fatalf("%s is not listed by Annotations", tc.name)
			}
			if err := tc.parse(annotated(v1.ServiceSpec{}, string(tc.name), annotation.All()[i].Example)); err != nil {
				t.Errorf("the example does not read: %v", err)
			}
		})
	}
}

func TestAnnotationParse(t *testing.T) {
	ips := string(annotation.NameLoadBalancerIPs)
	for _, tc := range []struct {
		name    string
		svc     *v1.Service
		want    []netip.Addr
		ok      bool
		wantErr string // the whole message users see in the InvalidAnnotation Event
	}{
		{name: "unset", svc: annotated(v1.ServiceSpec{})},
		{name: "empty", svc: annotated(v1.ServiceSpec{}, ips, "")},
		{name: "blank is set, and no address", svc: annotated(v1.ServiceSpec{}, ips, " "), ok: true},
		{name: "one per family", svc: annotated(v1.ServiceSpec{}, ips, "198.18.100.10, 2001:db8:100::10"), ok: true,
			want: []netip.Addr{netip.MustParseAddr("198.18.100.10"), netip.MustParseAddr("2001:db8:100::10")}},
		{name: "IPv4-mapped reads as IPv4", svc: annotated(v1.ServiceSpec{}, ips, "::ffff:198.18.100.10"), ok: true,
			want: []netip.Addr{netip.MustParseAddr("198.18.100.10")}},
		{name: "garbage", svc: annotated(v1.ServiceSpec{}, ips, "not-an-ip"), ok: true,
			wantErr: `metal-ccm.io/load-balancer-ips: "not-an-ip" is not an IP address: invalid annotation`},
		{name: "a zone", svc: annotated(v1.ServiceSpec{}, ips, "fe80::1%eth0"), ok: true,
			wantErr: `metal-ccm.io/load-balancer-ips: "fe80::1%eth0" is not an IP address: invalid annotation`},
		{name: "an empty item", svc: annotated(v1.ServiceSpec{}, ips, "198.18.100.10,"), ok: true,
			wantErr: `metal-ccm.io/load-balancer-ips: "" is not an IP address: invalid annotation`},
		{name: "two of a family", svc: annotated(v1.ServiceSpec{}, ips, "198.18.100.10,198.18.100.11"), ok: true,
			wantErr: `metal-ccm.io/load-balancer-ips: more than one IPv4 address: invalid annotation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := annotation.LoadBalancerIPs.Parse(tc.svc)
			if tc.wantErr != "" {
				if !errors.Is(err, annotation.ErrInvalid) || err.Error() != tc.wantErr || reasonFor(err) != ReasonInvalidAnnotation {
					t.Errorf("err = %v, want %q wrapping annotation.ErrInvalid", err, tc.wantErr)
				}
				return
			}
			if err != nil || ok != tc.ok || !slices.Equal(got, tc.want) {
				t.Errorf("Parse = %v, %v, %v; want %v, %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
}

func TestRequestedIPs(t *testing.T) {
	ips := string(annotation.NameLoadBalancerIPs)
	for _, tc := range []struct {
		name    string
		svc     *v1.Service
		want    string
		wantErr string
	}{
		{name: "the annotation wins", svc: annotated(v1.ServiceSpec{LoadBalancerIP: "198.18.100.2"}, ips, "198.18.100.1"), want: "198.18.100.1"},
		{name: "spec.loadBalancerIP without the annotation", svc: annotated(v1.ServiceSpec{LoadBalancerIP: "198.18.100.2"}), want: "198.18.100.2"},
		{name: "an empty annotation is unset", svc: annotated(v1.ServiceSpec{LoadBalancerIP: "198.18.100.2"}, ips, ""), want: "198.18.100.2"},
		{name: "a blank annotation asks for none", svc: annotated(v1.ServiceSpec{LoadBalancerIP: "198.18.100.2"}, ips, " ")},
		{name: "a bad spec.loadBalancerIP names the field", svc: annotated(v1.ServiceSpec{LoadBalancerIP: "nope"}),
			wantErr: `spec.loadBalancerIP: "nope" is not an IP address: invalid annotation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := requestedIPs(tc.svc)
			if tc.wantErr != "" {
				if !errors.Is(err, annotation.ErrInvalid) || err.Error() != tc.wantErr {
					t.Errorf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			var want []netip.Addr
			if tc.want != "" {
				want = []netip.Addr{netip.MustParseAddr(tc.want)}
			}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("requestedIPs = %v, %v; want %v", got, err, want)
			}
		})
	}
}
