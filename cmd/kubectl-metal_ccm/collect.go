package main

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/ipam"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
	"github.com/metal-ccm/metal-ccm/pkg/sessions"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
)

// What the chart names (deploy/chart/metal-ccm).
const (
	replicaSelector = "app.kubernetes.io/name=metal-cloud-controller-manager"
	agentSelector   = "app.kubernetes.io/name=metal-node-agent"
	configKey       = "cloud-config.yaml"
)

// ErrNotRunning: no replica leads and none runs in the namespace.
var ErrNotRunning = errors.New("metal-ccm is not running")

// source says where to look.
type source struct {
	cs        kubernetes.Interface
	namespace string
	leaseName string
	configMap string
	now       time.Time
}

// collect reads everything the status shows. It fails with ErrNotRunning
// (and a Status as far as it got) when no replica runs.
func (s source) collect(ctx context.Context) (*Status, error) {
	st := &Status{Namespace: s.namespace}
	if err := s.leader(ctx, st); err != nil {
		return nil, err
	}
	if err := s.pods(ctx, st); err != nil {
		return nil, err
	}
	if !st.running() {
		return st, s.notRunning(st)
	}
	cfg := s.config(ctx, st)
	if err := s.sessions(ctx, st); err != nil {
		return nil, err
	}
	nodeList, err := s.cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	st.Nodes = nodesOf(nodeList.Items, cfg)
	markLeader(st, nodeList.Items)
	svcs, err := s.cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	served := servedBy(svcs.Items, cfg)
	st.Pools, st.OutsidePools = poolsOf(cfg, served)
	st.Services = s.servicesOf(ctx, served)
	return st, nil
}

// leader reads the leader-election Lease.
func (s source) leader(ctx context.Context, st *Status) error {
	lease, err := s.cs.CoordinationV1().Leases(s.namespace).Get(ctx, s.leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get the leader-election lease %s/%s: %w", s.namespace, s.leaseName, err)
	}
	st.Leader = leaderOf(lease, s.now)
	return nil
}

func leaderOf(lease *coordinationv1.Lease, now time.Time) *Leader {
	l := &Leader{Lease: lease.Namespace + "/" + lease.Name, Identity: ptr.Deref(lease.Spec.HolderIdentity, ""), Expired: true}
	if lease.Spec.RenewTime != nil {
		l.Renewed = lease.Spec.RenewTime.Time
		if d := lease.Spec.LeaseDurationSeconds; d != nil {
			l.Expired = now.After(l.Renewed.Add(time.Duration(*d) * time.Second))
		}
	}
	if l.Identity == "" {
		l.Expired = true
	}
	return l
}

// pods reads the replicas' and the agents' pods.
func (s source) pods(ctx context.Context, st *Status) error {
	list := func(sel string) ([]Pod, error) {
		pods, err := s.cs.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return nil, fmt.Errorf("list pods %s in %s: %w", sel, s.namespace, err)
		}
		out := make([]Pod, 0, len(pods.Items))
		for i := range pods.Items {
			out = append(out, podOf(&pods.Items[i]))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		return out, nil
	}
	var err error
	if st.Replicas, err = list(replicaSelector); err != nil {
		return err
	}
	st.Agents, err = list(agentSelector)
	return err
}

// markLeader marks the replica pod the leader's identity names, if one
// does (Status.LeaderPod).
func markLeader(st *Status, nodeList []v1.Node) {
	if st.Leader == nil || st.Leader.Expired {
		return
	}
	hostnames := map[string]string{}
	for i := range nodeList {
		hostnames[nodeList[i].Name] = nodeList[i].Labels[v1.LabelHostname]
	}
	for i := range st.Replicas {
		if leads(st.Leader.Identity, st.Replicas[i], hostnames[st.Replicas[i].Node]) {
			st.Replicas[i].Leader = true
			st.LeaderPod = st.Replicas[i].Name
			return
		}
	}
}

// leads reports whether the leader's identity is the pod's. The manager's
// identity is its hostname and a UUID (HOSTNAME_UUID): the pod's name, or
// on the host's network (the chart's default) its machine's hostname,
// which the node's name or its kubernetes.io/hostname label are unless the
// kubelet was told otherwise (--hostname-override).
func leads(identity string, p Pod, nodeHostname string) bool {
	host, _, ok := strings.Cut(identity, "_")
	if !ok || host == "" {
		return false
	}
	return host == p.Name || strings.EqualFold(host, p.Node) || strings.EqualFold(host, nodeHostname)
}

func podOf(p *v1.Pod) Pod {
	out := Pod{Name: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase)}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			out.Ready = true
		}
	}
	for _, c := range p.Status.ContainerStatuses {
		out.Restarts += c.RestartCount
	}
	return out
}

// notRunning says why the namespace shows no running CCM.
func (s source) notRunning(st *Status) error {
	lease := "no leader-election Lease " + s.namespace + "/" + s.leaseName
	if st.Leader != nil {
		lease = fmt.Sprintf("the leader-election Lease %s was last renewed %s ago", st.Leader.Lease, age(s.now.Sub(st.Leader.Renewed)))
		if st.Leader.Renewed.IsZero() {
			lease = "the leader-election Lease " + st.Leader.Lease + " is held by nobody"
		}
	}
	pods := fmt.Sprintf("no pod labelled %s", replicaSelector)
	if n := len(st.Replicas); n > 0 {
		pods = fmt.Sprintf("none of the %d pods labelled %s is Ready", n, replicaSelector)
	}
	return fmt.Errorf("%w in namespace %s:\n  %s,\n  and %s.\n"+
		"Is it installed in another namespace? kubectl metal-ccm status -n NAMESPACE\n"+
		"Else see its pods and their logs: kubectl -n %s get pods,events; kubectl -n %s logs -l %s",
		ErrNotRunning, s.namespace, lease, pods, s.namespace, s.namespace, replicaSelector)
}

// config reads and parses the cloud-config; nil when it cannot (the
// reason is in st.Config.Error).
func (s source) config(ctx context.Context, st *Status) *config.CloudConfig {
	st.Config.Source = "ConfigMap " + s.namespace + "/" + s.configMap
	cm, err := s.cs.CoreV1().ConfigMaps(s.namespace).Get(ctx, s.configMap, metav1.GetOptions{})
	if err != nil {
		st.Config.Error = err.Error()
		return nil
	}
	data, ok := cm.Data[configKey]
	if !ok {
		st.Config.Error = "no key " + configKey
		return nil
	}
	cfg, err := config.Parse([]byte(data))
	if err != nil {
		st.Config.Error = err.Error()
		return nil
	}
	st.Config.Class = cfg.LoadBalancer.Class
	st.Config.ServeDefaultClass = cfg.LoadBalancer.ServeDefaultClass
	st.Config.BGPPeers = len(cfg.BGP.Peers)
	if len(cfg.BGP.Peers) > 0 {
		st.Config.AnnounceFrom = string(cfg.BGP.AnnounceFrom)
	}
	return cfg
}

// sessions reads the published sessions (pkg/sessions).
func (s source) sessions(ctx context.Context, st *Status) error {
	leases, err := s.cs.CoordinationV1().Leases(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: sessions.LabelRole})
	if err != nil {
		return fmt.Errorf("list the sessions' leases in %s: %w", s.namespace, err)
	}
	for i := range leases.Items {
		p, err := sessions.Decode(&leases.Items[i])
		if err != nil {
			st.Warnings = append(st.Warnings, err.Error())
			continue
		}
		st.Sessions = append(st.Sessions, p)
	}
	sort.Slice(st.Sessions, func(i, j int) bool {
		a, b := st.Sessions[i], st.Sessions[j]
		if a.Role != b.Role {
			return a.Role == sessions.RoleReplica
		}
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		return a.Pod < b.Pod
	})
	return nil
}

// nodesOf says which nodes may carry LoadBalancer traffic, and why the
// others may not (the predicates the leader applies, pkg/nodes).
func nodesOf(list []v1.Node, cfg *config.CloudConfig) Nodes {
	preds := nodes.LoadBalancerTraffic
	if cfg != nil && cfg.LoadBalancer.HasProtocol(config.ProtocolL2) {
		preds = slices.Concat(preds, []nodes.Named{{
			Pred:  func(n *v1.Node) bool { return cfg.L2.Selects(labels.Set(n.Labels)) },
			Fails: "not selected by l2.nodeSelector (L2 pools only)",
		}})
	}
	out := Nodes{Total: len(list)}
	ptrs := make([]*v1.Node, 0, len(list))
	for i := range list {
		n := &list[i]
		ptrs = append(ptrs, n)
		var why []string
		for _, p := range preds {
			if !p.Pred(n) {
				why = append(why, p.Fails)
			}
		}
		if len(why) == 0 {
			out.Eligible++
			continue
		}
		out.Excluded = append(out.Excluded, ExcludedNode{Name: n.Name, Reasons: why})
	}
	sort.Slice(out.Excluded, func(i, j int) bool { return out.Excluded[i].Name < out.Excluded[j].Name })
	out.NoneWhy = nodes.Why(ptrs, preds...)
	return out
}

// servedBy are the LoadBalancer Services of the config's class; all
// LoadBalancer Services without a config.
func servedBy(list []v1.Service, cfg *config.CloudConfig) []*v1.Service {
	var out []*v1.Service
	for i := range list {
		svc := &list[i]
		if svc.Spec.Type != v1.ServiceTypeLoadBalancer {
			continue
		}
		if cfg != nil && !cfg.LoadBalancer.Rule().Wants(svc) {
			continue
		}
		out = append(out, svc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// poolsOf counts each pool's addresses in the Services' status (the
// allocator's database: one address shared by Services counts once), and
// those in no pool.
func poolsOf(cfg *config.CloudConfig, svcs []*v1.Service) ([]Pool, int) {
	used := map[netip.Addr]bool{}
	for _, svc := range svcs {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ip, err := netip.ParseAddr(ing.IP); err == nil {
				used[ip.Unmap()] = true
			}
		}
	}
	if cfg == nil {
		return nil, 0
	}
	var out []Pool
	inPools := map[netip.Addr]bool{}
	for i := range cfg.LoadBalancer.Pools {
		p := &cfg.LoadBalancer.Pools[i]
		pool := ipam.Pool{Name: p.Name, Ranges: p.Ranges()}
		announce := make([]string, 0, len(p.Announce))
		for _, a := range p.Announce {
			announce = append(announce, string(a))
		}
		for _, f := range []ipam.Family{ipam.IPv4, ipam.IPv6} {
			if !pool.HasFamily(f) {
				continue
			}
			u := Pool{Name: p.Name, Family: f.String(), Size: pool.Size(f), Announce: announce, AutoAssign: p.AutoAssign == nil || *p.AutoAssign}
			for ip := range used {
				if ipam.FamilyOf(ip) == f && pool.Contains(ip) {
					u.Used++
					inPools[ip] = true
				}
			}
			u.Free = u.Size - u.Used
			out = append(out, u)
		}
	}
	return out, len(used) - len(inPools)
}

// servicesOf counts the served Services announced, and says why each other
// one is not: its first condition that is not True (pkg/svcstatus), or,
// without conditions, its last Warning Event.
func (s source) servicesOf(ctx context.Context, svcs []*v1.Service) Services {
	out := Services{Total: len(svcs)}
	lookups := 0
	for _, svc := range svcs {
		var addrs []string
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				addrs = append(addrs, ing.IP)
			}
		}
		p := PendingService{Namespace: svc.Namespace, Name: svc.Name, Addresses: addrs}
		var conds []metav1.Condition
		for _, c := range svc.Status.Conditions {
			if c.Type == svcstatus.TypeAllocated || c.Type == svcstatus.TypeAnnounced {
				conds = append(conds, c)
			}
		}
		if len(conds) == 0 {
			p.Reason, p.Message = "NoConditions", "the leader has not written its conditions yet"
			// One Events query per such Service, for the first few only.
			if lookups < maxEventLookups {
				lookups++
				if e := s.lastWarning(ctx, svc); e != nil {
					p.Reason, p.Message = e.Reason, e.Message
				}
			}
			out.Pending = append(out.Pending, p)
			continue
		}
		ok := true
		for _, typ := range []string{svcstatus.TypeAllocated, svcstatus.TypeAnnounced} {
			c := findCondition(conds, typ)
			if c == nil || c.Status == metav1.ConditionTrue {
				continue
			}
			ok = false
			p.Condition, p.Reason, p.Message = typ, c.Reason, c.Message
			break
		}
		if ok && findCondition(conds, svcstatus.TypeAnnounced) != nil {
			out.Announced++
			continue
		}
		if ok {
			p.Reason, p.Message = svcstatus.ReasonPending, "allocated, not announced yet"
		}
		out.Pending = append(out.Pending, p)
	}
	return out
}

// maxEventLookups bounds the Events queries of one status.
const maxEventLookups = 20

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// lastWarning is the newest Warning Event about svc, nil when none (or
// when they cannot be read).
func (s source) lastWarning(ctx context.Context, svc *v1.Service) *v1.Event {
	evs, err := s.cs.CoreV1().Events(svc.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Service", "involvedObject.name": svc.Name, "type": v1.EventTypeWarning,
	}.String()})
	if err != nil || len(evs.Items) == 0 {
		return nil
	}
	last := &evs.Items[0]
	for i := range evs.Items {
		if eventTime(&evs.Items[i]).After(eventTime(last)) {
			last = &evs.Items[i]
		}
	}
	return last
}

func eventTime(e *v1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}
