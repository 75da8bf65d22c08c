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
// eligibility predicate excludes (nodesWhy), or, for a Local Service whose
// nodes qualify, that none has a ready endpoint. Empty when not known.
func noNodeWhy(list []*v1.Node, cfg *config.CloudConfig, svc *v1.Service, a *svcstatus.Announcement) string {
	return localWhy(nodesWhy(list, cfg, a.Protocol), svc)
}

// nodesWhy is nodes.Why over the eligibility predicates of protocol (with
// l2.nodeSelector for L2). It reads every node, and depends on nothing
// else: the status writer's round computes it once per protocol, not once
// per Service (1,000 L2 Services whose l2.nodeSelector picks none of 5,000
// nodes made each round 5 million predicate calls).
func nodesWhy(list []*v1.Node, cfg *config.CloudConfig, protocol svcstatus.Protocol) string {
	preds := nodes.LoadBalancerTraffic
	if protocol == svcstatus.L2 {
		preds = slices.Concat(preds, []nodes.Named{{
			Pred:  func(n *v1.Node) bool { return cfg.L2.Selects(labels.Set(n.Labels)) },
			Fails: "not selected by l2.nodeSelector",
		}})
	}
	return nodes.Why(list, preds...)
}

// localWhy is noNodeWhy given nodesWhy's answer for svc's protocol.
func localWhy(nodesWhy string, svc *v1.Service) string {
	if nodesWhy != "" {
		return nodesWhy
	}
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		return "no eligible node: no node that may carry LoadBalancer traffic has a ready endpoint (externalTrafficPolicy Local)"
	}
	return ""
}
