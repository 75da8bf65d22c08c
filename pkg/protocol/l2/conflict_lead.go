package l2

import (
	"bytes"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/l2/elect"
	"github.com/metal-ccm/metal-ccm/pkg/protocol"
)

// conflictKey is one address of one Service.
type conflictKey struct {
	svc  types.UID
	addr netip.Addr
}

// Conflict is what the agents report of addr: held by a host outside the
// cluster, by whom.
func (o *observer) Conflict(addr netip.Addr) (elect.Conflict, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c, ok := o.conflicts[addr.Unmap()]
	return c, ok
}

// conflictCount is how many addresses the agents report in conflict.
func (o *observer) conflictCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.conflicts)
}

// conflictEvents records a Warning Event on each served Service for each
// of its L2 addresses that a host outside the cluster holds, once per
// conflict and foreign MAC: warned holds what was recorded (by this
// leader), and forgets a conflict once it ends, so that a new one is told
// again.
func (o *observer) conflictEvents(list []*v1.Service, lb *config.LoadBalancer, env protocol.LeaderEnv, warned map[conflictKey]string) {
	now := map[conflictKey]string{}
	for _, svc := range list {
		if !o.wants(svc) {
			continue
		}
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			a, err := netip.ParseAddr(ing.IP)
			if err != nil || !lb.Announces(a, config.ProtocolL2) {
				continue
			}
			c, held := o.Conflict(a)
			if !held {
				continue
			}
			k, mac := conflictKey{svc.UID, a.Unmap()}, macOrUnknown(c.MAC)
			now[k] = mac
			if warned[k] == mac {
				continue
			}
			env.Event(svc, v1.EventTypeWarning, ReasonL2AddressConflict,
				"%s is held by a host outside the cluster (MAC %s, found by %s): no node answers it until that host lets it go",
				a, mac, strings.Join(c.Nodes, ","))
		}
	}
	clear(warned)
	maps.Copy(warned, now)
}

// sameConflicts reports whether two views of the conflicts agree.
func sameConflicts(a, b map[netip.Addr]elect.Conflict) bool {
	return maps.EqualFunc(a, b, func(x, y elect.Conflict) bool {
		return bytes.Equal(x.MAC, y.MAC) && slices.Equal(x.Nodes, y.Nodes)
	})
}

func macOrUnknown(mac net.HardwareAddr) string {
	if len(mac) == 0 {
		return "unknown"
	}
	return mac.String()
}
