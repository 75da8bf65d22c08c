package annotation

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAliases: MetalLB's annotation is read when ours is not set; ours wins
// when both are; an unreadable alias names itself in the error.
func TestAliases(t *testing.T) {
	svc := func(kv ...string) *v1.Service {
		s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Annotations[kv[i]] = kv[i+1]
		}
		return s
	}
	for _, tc := range []struct {
		name string
		svc  *v1.Service
		want string
		ok   bool
	}{
		{"none", svc(), "", false},
		{"MetalLB's", svc("metallb.io/allow-shared-ip", "dns"), "dns", true},
		{"MetalLB's older name", svc("metallb.universe.tf/allow-shared-ip", "dns"), "dns", true},
		{"ours wins", svc("metallb.io/allow-shared-ip", "theirs", string(NameSharingKey), "ours"), "ours", true},
		{"an empty one of ours is not set", svc(string(NameSharingKey), "", "metallb.io/allow-shared-ip", "theirs"), "theirs", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := SharingKey.Parse(tc.svc)
			if err != nil || ok != tc.ok || got != tc.want {
				t.Errorf("Parse = %q, %v, %v; want %q, %v", got, ok, err, tc.want, tc.ok)
			}
		})
	}
	_, _, err := LoadBalancerIPs.Parse(svc("metallb.io/loadBalancerIPs", "not-an-ip"))
	if err == nil || err.Error() != `metallb.io/loadBalancerIPs: "not-an-ip" is not an IP address: invalid annotation` {
		t.Errorf("an unreadable alias: %v", err)
	}
}
