// Package kubevip converts kube-vip-cloud-provider's ConfigMap (kubevip in
// kube-system) into the cloud-config, reporting what has no equivalent.
//
// The ConfigMap's keys: cidr-<namespace> and range-<namespace> (comma
// separated CIDRs or first-last ranges) give a namespace its own
// addresses, cidr-global and range-global those of every other namespace;
// a cidr- key wins over the range- key of the same namespace.
// allow-share-<namespace>, interface-<namespace>, search-order and
// skip-end-ips-in-cidr tune the allocation.
package kubevip

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// The ConfigMap's keys and prefixes.
const (
	global          = "global"
	prefixCIDR      = "cidr-"
	prefixRange     = "range-"
	prefixShare     = "allow-share-"
	prefixInterface = "interface-"
	keySearchOrder  = "search-order"
	keySkipEnds     = "skip-end-ips-in-cidr"
	// dhcpPool asks kube-vip to get the address by DHCP.
	dhcpPool = "0.0.0.0/32"
)

// Options are the choices the ConfigMap does not make: how kube-vip
// itself (its DaemonSet, not the cloud provider) announced the addresses.
type Options struct {
	// Announce is how the pools are announced: L2 (kube-vip's ARP mode) or
	// BGP (its BGP mode: the peers are in kube-vip's own settings, to be
	// added by hand).
	Announce config.Protocol
	// L2SecretFile is l2.secretFile with Announce L2.
	L2SecretFile string
}

// Convert turns the ConfigMap among objs into a cloud-config and the
// report of what it could not carry. It needs exactly one ConfigMap.
func Convert(objs []migrate.Object, opts Options) (*config.CloudConfig, *migrate.Report, error) {
	if opts.Announce == "" {
		opts.Announce = config.ProtocolL2
	}
	if opts.L2SecretFile == "" {
		opts.L2SecretFile = migrate.DefaultL2SecretFile
	}
	rep := &migrate.Report{}
	var cms []*migrate.Object
	for i := range objs {
		if objs[i].APIVersion == "v1" && objs[i].Kind == "ConfigMap" {
			cms = append(cms, &objs[i])
		} else {
			rep.Add(objs[i].Ref(), "", "not a ConfigMap: skipped")
		}
	}
	if len(cms) != 1 {
		return nil, nil, fmt.Errorf("want one ConfigMap (kube-vip-cloud-provider's, kubevip in kube-system), got %d", len(cms))
	}
	var cm v1.ConfigMap
	if _, err := cms[0].DecodeInto(&cm); err != nil {
		return nil, nil, fmt.Errorf("decode: %w", err)
	}
	c := &converter{ref: cms[0].Ref(), data: cm.Data, opts: opts, rep: rep}
	cfg := &config.CloudConfig{APIVersion: config.APIVersion, Kind: config.Kind}
	c.pools(&cfg.LoadBalancer)
	c.settings(cfg)
	return cfg, rep, nil
}

type converter struct {
	ref  string
	data map[string]string
	opts Options
	rep  *migrate.Report
}

func (c *converter) field(key string) string { return "data." + key }

// pools writes one pool per namespace with addresses, in namespace order,
// then the global pool: a Service takes the first pool that allows it, so
// a namespace's own addresses come before the global ones.
func (c *converter) pools(lb *config.LoadBalancer) {
	var namespaces []string
	for key := range c.data {
		for _, prefix := range []string{prefixCIDR, prefixRange} {
			if ns, ok := strings.CutPrefix(key, prefix); ok && ns != global && !slices.Contains(namespaces, ns) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	slices.Sort(namespaces)
	var taken []ipam.Range
	for _, ns := range append(namespaces, global) {
		rs := c.addresses(ns)
		if len(rs) == 0 {
			continue
		}
		if left := subtract(rs, taken); !slices.Equal(left, rs) {
			c.rep.Add(c.ref, c.field(c.addressKey(ns)), "addresses also in an earlier pool: pools may not overlap, they stay in the earlier one only")
			rs = left
		}
		taken = append(taken, rs...)
		pool := config.Pool{Name: ns, Announce: []config.Protocol{c.opts.Announce}}
		if ns != global {
			pool.Namespaces = []string{ns}
		}
		for _, r := range rs {
			pool.Addresses = append(pool.Addresses, text(r))
		}
		lb.Pools = append(lb.Pools, pool)
	}
	if len(namespaces) > 0 && c.has(global) {
		c.rep.Add(c.ref, c.field(c.addressKey(global)), "kube-vip gives a namespace with its own pool none of the global addresses; here the pools are tried in order, so such a namespace's Services get global addresses once its own pool is full")
	}
}

func (c *converter) has(ns string) bool {
	_, cidr := c.data[prefixCIDR+ns]
	_, rng := c.data[prefixRange+ns]
	return cidr || rng
}

// addressKey is the key kube-vip takes a namespace's addresses from.
func (c *converter) addressKey(ns string) string {
	if _, ok := c.data[prefixCIDR+ns]; ok {
		return prefixCIDR + ns
	}
	return prefixRange + ns
}

// addresses reads the namespace's CIDRs, or its ranges when it has no
// CIDRs, as kube-vip does, merged into ranges that do not overlap.
func (c *converter) addresses(ns string) []ipam.Range {
	key := c.addressKey(ns)
	if key == prefixCIDR+ns {
		if _, both := c.data[prefixRange+ns]; both {
			c.rep.Add(c.ref, c.field(prefixRange+ns), "kube-vip ignores it while %s is set: left out (a Service holding one of its addresses keeps it, unannounced, with the Event AddressOutsidePools)", key)
		}
	}
	skipEnds := c.data[keySkipEnds] == "true"
	var rs []ipam.Range
	for _, entry := range strings.Split(c.data[key], ",") {
		entry = strings.TrimSpace(entry)
		switch entry {
		case "":
			continue
		case dhcpPool:
			c.rep.Add(c.ref, c.field(key), "%s (addresses by DHCP): no equivalent, left out", dhcpPool)
			continue
		}
		r, err := c.parse(key, entry, skipEnds)
		if err != nil {
			c.rep.Add(c.ref, c.field(key), "%q: %v: left out", entry, err)
			continue
		}
		rs = append(rs, r)
	}
	return merge(rs)
}

// parse reads one entry: a CIDR (kube-vip takes its network when host bits
// are set; with skip-end-ips-in-cidr it leaves out an IPv4 CIDR's first and
// last addresses, except in a /31 or /32) or a range.
func (c *converter) parse(key, entry string, skipEnds bool) (ipam.Range, error) {
	if !strings.HasPrefix(key, prefixCIDR) {
		return ipam.ParseRange(entry)
	}
	p, err := netip.ParsePrefix(entry)
	if err != nil {
		return ipam.Range{}, fmt.Errorf("not a CIDR: %w", err)
	}
	if p.Masked() != p {
		c.rep.Add(c.ref, c.field(key), "%s has host bits set: written as its network %s, whose addresses kube-vip hands out", entry, p.Masked())
	}
	r := ipam.PrefixRange(p)
	if skipEnds && p.Addr().Is4() && p.Bits() < 31 {
		r = ipam.Range{First: r.First.Next(), Last: r.Last.Prev()}
	}
	return r, nil
}

// settings maps the other keys, and reports those with no equivalent.
func (c *converter) settings(cfg *config.CloudConfig) {
	keys := make([]string, 0, len(c.data))
	for k := range c.data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var ifaces []string
	for _, k := range keys {
		v := c.data[k]
		switch {
		case strings.HasPrefix(k, prefixCIDR), strings.HasPrefix(k, prefixRange), k == keySkipEnds:
		case strings.HasPrefix(k, prefixShare):
			if v == "true" {
				c.rep.Add(c.ref, c.field(k), "kube-vip shares an IPv4 address between any Services whose ports differ; here only Services with the same metal-ccm.io/sharing-key share one: give each Service that shares an address today one key per address before the switch, or the newer gets IPConflict and a new address")
			}
		case strings.HasPrefix(k, prefixInterface):
			if !slices.Contains(ifaces, v) {
				ifaces = append(ifaces, v)
			}
		case k == keySearchOrder:
			if v == "desc" {
				c.rep.Add(c.ref, c.field(k), "no equivalent: the search for a free address starts at a place derived from the Service's namespace and name")
			}
		default:
			c.rep.Add(c.ref, c.field(k), "a key the converter does not know: no equivalent, check it by hand")
		}
	}
	c.interfaces(cfg, ifaces)
	switch c.opts.Announce {
	case config.ProtocolL2:
		if len(cfg.LoadBalancer.Pools) > 0 {
			cfg.L2.SecretFile = c.opts.L2SecretFile
		}
	case config.ProtocolBGP:
		c.rep.Add(c.ref, "", "the BGP peers and AS are kube-vip's own settings (its DaemonSet's bgp_as, bgp_peers): add bgp.asn and bgp.peers by hand")
	}
}

// interfaces maps interface-<namespace>: one interface for every
// namespace is l2.interfaces; per namespace there is no equivalent.
func (c *converter) interfaces(cfg *config.CloudConfig, ifaces []string) {
	switch {
	case len(ifaces) == 0:
	case c.opts.Announce != config.ProtocolL2:
		c.rep.Add(c.ref, c.field(prefixInterface+"*"), "an interface is used with L2 only: left out")
	case len(ifaces) == 1:
		cfg.L2.Interfaces = ifaces
	default:
		c.rep.Add(c.ref, c.field(prefixInterface+"*"), "interfaces %s per namespace: l2.interfaces is one list for every pool and is left unset (each address is answered on the interfaces whose subnet holds it)", strings.Join(ifaces, ", "))
	}
}
