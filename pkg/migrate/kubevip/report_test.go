package kubevip

import (
	"slices"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/golden"
)

// TestReport checks, for each key with no equivalent, the report's item
// and that the rest converts into a config the project's loader takes.
func TestReport(t *testing.T) {
	const cm = "ConfigMap kube-system/kubevip: "
	for _, tc := range []struct {
		name  string
		data  string // the ConfigMap's data, YAML
		opts  Options
		want  []string // "Object: field"
		check func(*testing.T, *config.CloudConfig)
	}{
		{name: "a global CIDR", data: "{cidr-global: 198.18.0.0/28}",
			check: func(t *testing.T, c *config.CloudConfig) {
				p := c.LoadBalancer.Pools[0]
				if p.Name != "global" || !slices.Equal(p.Addresses, []string{"198.18.0.0/28"}) || len(p.Namespaces) != 0 {
					t.Errorf("pool %+v", p)
				}
			}},
		{name: "DHCP, a bad entry, an unknown key", data: `{cidr-global: "0.0.0.0/32,198.18.0.0/28,nonsense", lease-time: "1h"}`,
			want: []string{cm + "data.cidr-global", cm + "data.cidr-global", cm + "data.lease-time"}},
		{name: "host bits", data: "{cidr-global: 198.18.0.3/30}",
			want: []string{cm + "data.cidr-global"},
			check: func(t *testing.T, c *config.CloudConfig) {
				if got := c.LoadBalancer.Pools[0].Addresses; !slices.Equal(got, []string{"198.18.0.0/30"}) {
					t.Errorf("addresses %v", got)
				}
			}},
		{name: "a namespace inside the global range", data: "{range-global: 198.18.0.0-198.18.0.255, cidr-web: 198.18.0.16/28}",
			want: []string{cm + "data.range-global", cm + "data.range-global"},
			check: func(t *testing.T, c *config.CloudConfig) {
				if got := c.LoadBalancer.Pools[1].Addresses; !slices.Equal(got, []string{"198.18.0.0/28", "198.18.0.32-198.18.0.255"}) {
					t.Errorf("global addresses %v", got)
				}
			}},
		{name: "interfaces per namespace", data: "{range-global: 198.18.0.0-198.18.0.9, interface-web: eth1, interface-global: eth0}",
			want: []string{cm + "data.interface-*"}},
		{name: "an interface with BGP", data: "{range-global: 198.18.0.0-198.18.0.9, interface-global: eth0}",
			opts: Options{Announce: config.ProtocolBGP},
			want: []string{cm + "data.interface-*", cm},
			check: func(t *testing.T, c *config.CloudConfig) {
				if c.L2.SecretFile != "" || !slices.Equal(c.LoadBalancer.Pools[0].Announce, []config.Protocol{config.ProtocolBGP}) {
					t.Errorf("l2 %+v, announce %v", c.L2, c.LoadBalancer.Pools[0].Announce)
				}
			}},
		{name: "sharing off, ascending", data: `{range-global: 198.18.0.0-198.18.0.9, allow-share-global: "false", search-order: asc}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kubevip, namespace: kube-system}\ndata: " + tc.data + "\n"
			cfg := golden.Items(t, in, func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
				return Convert(objs, tc.opts)
			}, tc.want)
			if tc.check != nil {
				tc.check(t, cfg)
			}
		})
	}
}

// TestNotOneConfigMap refuses an input without exactly one ConfigMap.
func TestNotOneConfigMap(t *testing.T) {
	if _, _, err := Convert(nil, Options{}); err == nil {
		t.Error("no ConfigMap was taken")
	}
}
