package config

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var protocols = []Protocol{ProtocolBGP, ProtocolL2}

// validateAnnounce checks a pool's announce list: known protocols, each
// once.
func (pool *Pool) validateAnnounce(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, proto := range pool.Announce {
		switch {
		case !slices.Contains(protocols, proto):
			errs = append(errs, field.NotSupported(p.Index(i), proto, protocols))
		case slices.Index(pool.Announce, proto) < i:
			errs = append(errs, field.Duplicate(p.Index(i), proto))
		}
	}
	return errs
}

// maxInterfaceName is the longest Linux interface name (IFNAMSIZ less the
// terminating zero).
const maxInterfaceName = 15

// interfaceName reports whether a non-empty name of at most
// maxInterfaceName characters can name a Linux interface.
func interfaceName(name string) bool {
	return !strings.ContainsAny(name, "/ \t\n:") && name != "." && name != ".."
}

func (l *L2) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, name := range l.Interfaces {
		ip := p.Child("interfaces").Index(i)
		switch {
		case name == "":
			errs = append(errs, field.Invalid(ip, name, "must not be empty"))
		case len(name) > maxInterfaceName:
			errs = append(errs, field.TooLong(ip, name, maxInterfaceName))
		case !interfaceName(name):
			errs = append(errs, field.Invalid(ip, name, "not an interface name"))
		case slices.Index(l.Interfaces, name) < i:
			errs = append(errs, field.Duplicate(ip, name))
		}
	}
	l.nodeSelector = nil
	if l.NodeSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(l.NodeSelector)
		if err != nil {
			errs = append(errs, field.Invalid(p.Child("nodeSelector"), l.NodeSelector, err.Error()))
		}
		l.nodeSelector = sel
	}
	if l.MemberlistPort == 0 {
		errs = append(errs, field.Invalid(p.Child("memberlistPort"), l.MemberlistPort, fmt.Sprintf("must be from 1 to %d", 65535)))
	}
	if !slices.Contains(failbacks, l.Failback) {
		errs = append(errs, field.NotSupported(p.Child("failback"), l.Failback, failbacks))
	}
	return errs
}

var failbacks = []Failback{FailbackRebalance, FailbackSticky}

// validateKey asks for the membership's key once a pool is announced with
// L2: without one, any process that reaches a node's memberlist port can
// read the membership and join it.
func (l *L2) validateKey(p *field.Path, lb *LoadBalancer) field.ErrorList {
	if l.SecretFile != "" || l.InsecureMembership || !lb.HasProtocol(ProtocolL2) {
		return nil
	}
	return field.ErrorList{field.Required(p.Child("secretFile"),
		"a pool is announced with L2: the agents' membership needs a key file (16, 24 or 32 bytes, raw or base64; the chart creates one), or l2.insecureMembership: true to run it without")}
}

// Announces reports whether the pool's addresses are made reachable with
// proto.
func (pool *Pool) Announces(proto Protocol) bool {
	if len(pool.Announce) == 0 { // not defaulted: BGP, as Default gives
		return proto == ProtocolBGP
	}
	return slices.Contains(pool.Announce, proto)
}

// Selects reports whether the l2.nodeSelector matches node labels (every
// node when it has none).
func (l *L2) Selects(nodeLabels labels.Set) bool {
	return l.nodeSelector == nil || l.nodeSelector.Matches(nodeLabels)
}
