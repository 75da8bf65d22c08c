package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate reports every problem of a defaulted config at once, each with its
// field path. The error wraps ErrInvalid.
func (c *CloudConfig) Validate() error {
	errs := c.validate()
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, 0, len(errs))
	for _, e := range errs {
		all = append(all, e)
	}
	return fmt.Errorf("%w:\n%w", ErrInvalid, errors.Join(all...))
}

func (c *CloudConfig) validate() field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != APIVersion {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), c.APIVersion, []string{APIVersion}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), c.Kind, []string{Kind}))
	}
	errs = append(errs, c.Nodes.validate(field.NewPath("nodes"))...)
	errs = append(errs, c.LoadBalancer.validate(field.NewPath("loadBalancer"))...)
	errs = append(errs, c.LoadBalancer.validateNotNodes(field.NewPath("loadBalancer"), c.Nodes.Inventory)...)
	errs = append(errs, c.BGP.validate(field.NewPath("bgp"))...)
	errs = append(errs, c.BGP.validatePeerNames(field.NewPath("bgp"))...)
	errs = append(errs, c.LoadBalancer.validatePolicy(field.NewPath("loadBalancer"), &c.BGP)...)
	errs = append(errs, c.Routes.validate(field.NewPath("routes"), &c.BGP)...)
	errs = append(errs, c.HealthChecks.validate(field.NewPath("healthChecks"))...)
	errs = append(errs, validateFastPath(field.NewPath("nodes", "powerState", "outOfService", "fastPath"), c.Nodes.PowerState.OutOfService, c.HealthChecks)...)
	errs = append(errs, c.L2.validate(field.NewPath("l2"))...)
	errs = append(errs, c.L2.validateKey(field.NewPath("l2"), &c.LoadBalancer)...)
	errs = append(errs, c.ServiceStatus.validate(field.NewPath("serviceStatus"))...)
	return errs
}

func (n *Nodes) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateLabelValue(p.Child("defaultInstanceType"), n.DefaultInstanceType)...)
	names := map[string]int{}
	ids := map[string]int{}
	for i := range n.Inventory {
		mp := p.Child("inventory").Index(i)
		m := &n.Inventory[i]
		errs = append(errs, m.validate(mp)...)
		if j, dup := names[m.Name]; dup && m.Name != "" {
			errs = append(errs, field.Duplicate(mp.Child("name"), fmt.Sprintf("%s (also inventory[%d])", m.Name, j)))
		} else {
			names[m.Name] = i
		}
		if j, dup := ids[m.ID]; dup && m.ID != "" {
			errs = append(errs, field.Duplicate(mp.Child("id"), fmt.Sprintf("%s (also inventory[%d])", m.ID, j)))
		} else {
			ids[m.ID] = i
		}
	}
	switch n.Discovery.Policy {
	case DiscoveryAccept, DiscoveryReject:
	default:
		errs = append(errs, field.NotSupported(p.Child("discovery", "policy"), n.Discovery.Policy,
			[]DiscoveryPolicy{DiscoveryAccept, DiscoveryReject}))
	}
	errs = append(errs, validateTopology(p.Child("topology"), n.Topology)...)
	// The source's name is checked where the sources are linked (the
	// provider: pkg/powerstate/builtin), not here: the node agent reads
	// this config too and links none.
	errs = append(errs, validateObject(p.Child("powerState", "settings"), n.PowerState.Settings)...)
	if oos := n.PowerState.OutOfService; oos.Enabled && n.PowerState.Source == DefaultPowerStateSource {
		errs = append(errs, field.Invalid(p.Child("powerState", "outOfService", "enabled"), true,
			"needs a power-state source other than none: nothing would ever say a machine is off"))
	}
	if d := n.PowerState.OutOfService.ConfirmFor; d != nil && (d.Duration < MinOutOfServiceConfirmFor || d.Duration > MaxOutOfServiceConfirmFor) {
		errs = append(errs, field.Invalid(p.Child("powerState", "outOfService", "confirmFor"), d.Duration.String(),
			fmt.Sprintf("must be from %s to %s", MinOutOfServiceConfirmFor, MaxOutOfServiceConfirmFor)))
	}
	errs = append(errs, validateFencing(p.Child("powerState", "fencing"), n.PowerState)...)
	for i := range n.Inventory {
		errs = append(errs, validateObject(p.Child("inventory").Index(i).Child("powerState"), n.Inventory[i].PowerState)...)
	}
	return errs
}

// validateObject refuses settings that are not a JSON object: each source
// reads its own fields from one.
func validateObject(p *field.Path, raw json.RawMessage) field.ErrorList {
	if len(raw) == 0 {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return field.ErrorList{field.Invalid(p, string(raw), "must be an object")}
	}
	return nil
}

var addressTypes = []v1.NodeAddressType{v1.NodeInternalIP, v1.NodeExternalIP, v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS}

func (m *Machine) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the node name of the machine"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(m.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), m.Name, msg))
		}
	}
	if m.ID != "" {
		for _, msg := range validation.IsDNS1123Subdomain(m.ID) {
			errs = append(errs, field.Invalid(p.Child("id"), m.ID, msg))
		}
	}
	for i, a := range m.Addresses {
		ap := p.Child("addresses").Index(i)
		switch a.Type {
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if _, err := netip.ParseAddr(a.Address); err != nil {
				errs = append(errs, field.Invalid(ap.Child("address"), a.Address, "not an IP address"))
			}
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			for _, msg := range validation.IsDNS1123Subdomain(a.Address) {
				errs = append(errs, field.Invalid(ap.Child("address"), a.Address, msg))
			}
		default:
			errs = append(errs, field.NotSupported(ap.Child("type"), a.Type, addressTypes))
		}
	}
	errs = append(errs, validateLabelValue(p.Child("instanceType"), m.InstanceType)...)
	errs = append(errs, validateLabelValue(p.Child("region"), m.Region)...)
	errs = append(errs, validateLabelValue(p.Child("zone"), m.Zone)...)
	errs = append(errs, metav1validation.ValidateLabels(m.Labels, p.Child("labels"))...)
	return errs
}

func validateLabelValue(p *field.Path, v string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(v) {
		errs = append(errs, field.Invalid(p, v, msg))
	}
	return errs
}

// ParsePrefix parses a CIDR that must be in canonical form (no host bits set).
func ParsePrefix(s string) (netip.Prefix, error) {
	pfx, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("parse CIDR %q: %w", s, err)
	}
	if pfx.Masked() != pfx {
		return netip.Prefix{}, fmt.Errorf("parse CIDR %q: host bits are set, the network is %s", s, pfx.Masked())
	}
	return pfx, nil
}

func validateTopology(p *field.Path, rules []TopologyRule) field.ErrorList {
	var errs field.ErrorList
	type indexed struct {
		pfx netip.Prefix
		i   int
	}
	var parsed []indexed
	for i, r := range rules {
		rp := p.Index(i)
		pfx, err := ParsePrefix(r.Subnet)
		if err != nil {
			errs = append(errs, field.Invalid(rp.Child("subnet"), r.Subnet, err.Error()))
		} else {
			parsed = append(parsed, indexed{pfx, i})
		}
		rules[i].subnet = pfx // the zero prefix when invalid
		if r.Region == "" && r.Zone == "" {
			errs = append(errs, field.Required(rp, "a region, a zone or both"))
		}
		errs = append(errs, validateLabelValue(rp.Child("region"), r.Region)...)
		errs = append(errs, validateLabelValue(rp.Child("zone"), r.Zone)...)
	}
	// Report each overlapping pair once, in input order.
	sort.SliceStable(parsed, func(a, b int) bool { return parsed[a].i < parsed[b].i })
	for a := range parsed {
		for b := a + 1; b < len(parsed); b++ {
			if parsed[a].pfx.Overlaps(parsed[b].pfx) {
				errs = append(errs, field.Invalid(p.Index(parsed[b].i).Child("subnet"), rules[parsed[b].i].Subnet,
					fmt.Sprintf("overlaps topology[%d].subnet %s", parsed[a].i, rules[parsed[a].i].Subnet)))
			}
		}
	}
	return errs
}

// validateFencing checks nodes.powerState.fencing. Whether the source can
// power machines off is checked where the sources are linked (the
// provider), as the source's name is.
func validateFencing(p *field.Path, ps PowerState) field.ErrorList {
	var errs field.ErrorList
	f := ps.Fencing
	if f.Enabled && ps.Source == DefaultPowerStateSource {
		errs = append(errs, field.Invalid(p.Child("enabled"), true,
			"needs a power-state source that can power machines off (ipmi, redfish), not none"))
	}
	if d := f.After; d != nil && (d.Duration < MinFencingAfter || d.Duration > MaxFencingAfter) {
		errs = append(errs, field.Invalid(p.Child("after"), d.Duration.String(),
			fmt.Sprintf("must be from %s to %s", MinFencingAfter, MaxFencingAfter)))
	}
	if m := f.MaxNodes; m != nil && *m < 1 {
		errs = append(errs, field.Invalid(p.Child("maxNodes"), *m, "must be at least 1"))
	}
	if f.MaxShare != "" {
		if _, err := f.MaxSharePercent(); err != nil {
			errs = append(errs, field.Invalid(p.Child("maxShare"), f.MaxShare, err.Error()))
		}
	}
	return errs
}

// MaxSharePercent is MaxShare as a number of percent; 0 when it is not set.
func (f Fencing) MaxSharePercent() (int, error) {
	if f.MaxShare == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(strings.TrimSuffix(f.MaxShare, "%"))
	if err != nil || !strings.HasSuffix(f.MaxShare, "%") || n < 1 || n > 100 {
		return 0, errors.New(`must be a percentage from "1%" to "100%"`)
	}
	return n, nil
}

// validateFastPath refuses a fast path that could never act: it asks the
// source about the nodes whose health check fails, so it needs the
// out-of-service taint and the health checks' settings.
func validateFastPath(p *field.Path, o OutOfService, h HealthChecks) field.ErrorList {
	if !o.FastPath {
		return nil
	}
	var errs field.ErrorList
	if !o.Enabled {
		errs = append(errs, field.Invalid(p, true, "needs nodes.powerState.outOfService.enabled: the fast path only takes the taint sooner"))
	}
	if h.Enabled != nil && !*h.Enabled {
		errs = append(errs, field.Invalid(p, true, "needs healthChecks.enabled: the fast path acts on a failing check of kube-proxy's health port"))
	}
	return errs
}
