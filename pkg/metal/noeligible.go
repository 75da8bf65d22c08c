package metal

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// noNodeWhy says why no node carries a's address: how many nodes each
// eligibility predicate excludes (nodes.Why), with l2.nodeSelector for L2;
// for a Local Service whose nodes qualify, that none has a ready endpoint.
// Empty when not known.
func noNodeWhy(list []*v1.Node, cfg *config.CloudConfig, svc *v1.Service, a *svcstatus.Announcement) string {
	preds := nodes.LoadBalancerTraffic
	if a.Protocol == svcstatus.L2 {
		preds = slices.Concat(preds, []nodes.Named{{
			Pred:  func(n *v1.Node) bool { return cfg.L2.Selects(labels.Set(n.Labels)) },
			Fails: "not selected by l2.nodeSelector",
		}})
	}
	if why := nodes.Why(list, preds...); why != "" {
		return why
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		return "no eligible node: no node that may carry LoadBalancer traffic has a ready endpoint (externalTrafficPolicy Local)"
	}
	return ""
}
