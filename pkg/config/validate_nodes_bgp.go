package config

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var announceFroms = []AnnounceFrom{AnnounceFromReplicas, AnnounceFromNodes}

// MaxEBGPMultihop is the largest TTL of a multihop session.
const MaxEBGPMultihop = 255

// validateAnnounceFrom checks announceFrom and the fields that only the
// node agents use (they would be ignored by the replicas: refused there, so
// nobody believes they apply), and compiles the peers' node selectors.
func (b *BGP) validateAnnounceFrom(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !slices.Contains(announceFroms, b.AnnounceFrom) {
		errs = append(errs, field.NotSupported(p.Child("announceFrom"), b.AnnounceFrom, announceFroms))
	}
	nodes := b.AnnounceFrom == AnnounceFromNodes
	if b.NodeASNLabel != "" {
		if !nodes {
			errs = append(errs, field.Invalid(p.Child("nodeASNLabel"), b.NodeASNLabel, "only with announceFrom Nodes"))
		}
		for _, msg := range validation.IsQualifiedName(b.NodeASNLabel) {
			errs = append(errs, field.Invalid(p.Child("nodeASNLabel"), b.NodeASNLabel, msg))
		}
	}
	if nodes && b.RouterID != "" {
		errs = append(errs, field.Invalid(p.Child("routerID"), b.RouterID, "not with announceFrom Nodes: each agent's router ID is its node's IPv4 address"))
	}
	for i := range b.Peers {
		peer := &b.Peers[i]
		pp := p.Child("peers").Index(i)
		peer.nodeSelector = nil
		if peer.NodeSelector != nil {
			if !nodes {
				errs = append(errs, field.Invalid(pp.Child("nodeSelector"), peer.NodeSelector, "only with announceFrom Nodes"))
			}
			sel, err := metav1.LabelSelectorAsSelector(peer.NodeSelector)
			if err != nil {
				errs = append(errs, field.Invalid(pp.Child("nodeSelector"), peer.NodeSelector, err.Error()))
			} else {
				peer.nodeSelector = sel
			}
		}
		if nodes && peer.LocalAddress != "" {
			errs = append(errs, field.Invalid(pp.Child("localAddress"), peer.LocalAddress,
				"not with announceFrom Nodes: each agent uses its node's address on the route to the peer"))
		}
		if peer.EBGPMultihop < 0 || peer.EBGPMultihop > MaxEBGPMultihop {
			errs = append(errs, field.Invalid(pp.Child("ebgpMultihop"), peer.EBGPMultihop, fmt.Sprintf("must be from 0 to %d", MaxEBGPMultihop)))
		}
	}
	return errs
}
