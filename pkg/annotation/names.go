// Package annotation holds every metal-ccm.io/ annotation of a Service: the
// ones users write, read through their typed declarations (declared.go),
// and the ones the leader writes for people to read.
package annotation

// The annotations the leader writes on LoadBalancer Services, for people
// to read; the service controller ignores their changes.
const (
	// Summary is the one-line summary of the announcement of each of the
	// Service's addresses (pkg/svcstatus).
	Summary = "metal-ccm.io/announcement"
	// L2Nodes is on Services with addresses of pools announced with L2:
	// which node answers for each address, as "address=node" pairs
	// separated by commas ("address=" while none does).
	L2Nodes = "metal-ccm.io/l2-nodes"
)

// OutOfService is on a node that the leader tainted
// node.kubernetes.io/out-of-service (its machine confirmed off): when it
// was tainted. The leader removes only the taints it marked so.
const OutOfService = "metal-ccm.io/out-of-service"

// Fenced is on a node that the leader powered off through its BMC
// (fencing): when. The leader removes it when the node is Ready again, and
// never fences a node that has it.
const Fenced = "metal-ccm.io/fenced"
