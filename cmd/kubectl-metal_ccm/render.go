package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/metal-ccm/metal-ccm/pkg/sessions"
)

// maxRows bounds a list of nodes, agents' sessions or Services in the text
// output; -o json has them all.
const maxRows = 20

// render writes st as text, sections as `cilium status` has them: what
// runs, the config, the pools, the sessions, the nodes, the Services, and
// what to look at next.
func render(w io.Writer, st *Status, now time.Time) error {
	r := &renderer{w: w, now: now}
	r.head(st)
	r.pools(st)
	r.sessions(st)
	r.nodes(st)
	r.services(st)
	r.next(st)
	return r.err
}

type renderer struct {
	w   io.Writer
	now time.Time
	err error
}

func (r *renderer) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

// table writes rows under header, indented, the columns aligned.
func (r *renderer) table(header string, rows [][]string) {
	if r.err != nil {
		return
	}
	tw := tabwriter.NewWriter(r.w, 0, 8, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "  "+strings.ReplaceAll(header, " ", "\t"))
	for _, row := range rows {
		_, _ = fmt.Fprintln(tw, "  "+strings.Join(row, "\t"))
	}
	r.err = tw.Flush()
}

func age(d time.Duration) string { return duration.HumanDuration(d) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func (r *renderer) head(st *Status) {
	r.printf("Namespace:    %s\n", st.Namespace)
	switch l := st.Leader; {
	case l == nil:
		r.printf("Leader:       none (no leader-election Lease)\n")
	case l.Expired:
		r.printf("Leader:       none (Lease %s last renewed %s ago by %s)\n", l.Lease, age(r.now.Sub(l.Renewed)), l.Identity)
	default:
		r.printf("Leader:       %s (Lease %s, renewed %s ago)\n", l.Identity, l.Lease, age(r.now.Sub(l.Renewed)))
	}
	r.podList("Replicas:", st.Replicas, st.leaderColumn())
	r.podList("Node agents:", st.Agents, nil)
	c := st.Config
	if c.Error != "" {
		r.printf("Config:       %s: %s\n", c.Source, c.Error)
		return
	}
	class := "Services without a loadBalancerClass"
	if c.Class != "" {
		class = "Services of class " + c.Class
		if c.ServeDefaultClass {
			class += " and without a class"
		}
	}
	bgp := "no BGP peers"
	if c.BGPPeers > 0 {
		bgp = "BGP from " + c.AnnounceFrom + " to " + plural(c.BGPPeers, "peer", "peers")
	}
	r.printf("Config:       %s: serves %s; %s\n", c.Source, class, bgp)
}

// leaderColumn is how the replicas' LEADER column says who leads: "yes"
// and "no", or "?" when a replica leads whose pod is not known (its
// hostname names no pod and no node).
func (s *Status) leaderColumn() func(Pod) string {
	unknown := s.Leader != nil && !s.Leader.Expired && s.LeaderPod == ""
	return func(p Pod) string {
		if unknown {
			return "?"
		}
		return yesNo(p.Leader)
	}
}

func (r *renderer) podList(title string, pods []Pod, leader func(Pod) string) {
	ready := 0
	for _, p := range pods {
		if p.Ready {
			ready++
		}
	}
	if len(pods) == 0 {
		r.printf("%-13s no pods in this namespace\n", title)
		return
	}
	r.printf("%-13s %s, %d Ready\n", title, plural(len(pods), "pod", "pods"), ready)
	if leader == nil && len(pods) > maxRows {
		return
	}
	header := "POD NODE READY RESTARTS"
	if leader != nil {
		header += " LEADER"
	}
	var rows [][]string
	for _, p := range pods {
		row := []string{p.Name, p.Node, yesNo(p.Ready), fmt.Sprint(p.Restarts)}
		if leader != nil {
			row = append(row, leader(p))
		}
		rows = append(rows, row)
	}
	r.table(header, rows)
}

func (r *renderer) pools(st *Status) {
	r.printf("\nPools:\n")
	if len(st.Pools) == 0 {
		r.printf("  none (the config has no pools, or cannot be read)\n")
		return
	}
	var rows [][]string
	for _, p := range st.Pools {
		rows = append(rows, []string{p.Name, p.Family, fmt.Sprint(p.Used), fmt.Sprint(p.Free), fmt.Sprint(p.Size), strings.Join(p.Announce, ","), yesNo(p.AutoAssign)})
	}
	r.table("POOL FAMILY USED FREE SIZE ANNOUNCE AUTO-ASSIGN", rows)
	if st.OutsidePools > 0 {
		r.printf("  %s in the Services' status in no pool (Services' condition OutsidePools)\n", plural(st.OutsidePools, "address", "addresses"))
	}
}

func (r *renderer) sessions(st *Status) {
	r.printf("\nBGP sessions:\n")
	if len(st.Sessions) == 0 {
		switch {
		case st.Config.BGPPeers == 0:
			r.printf("  none (the config has no BGP peers)\n")
		case st.Config.AnnounceFrom == "Nodes":
			r.printf("  none published yet (each node agent publishes its own within a minute of starting, from a pod with POD_NAME: docs/operating.md)\n")
		default:
			r.printf("  none published yet (each replica publishes its own within a minute of starting)\n")
		}
		return
	}
	var rows [][]string
	agents, agentsUp := 0, 0
	for _, s := range st.Sessions {
		up := true
		for _, p := range s.Peers {
			up = up && p.Up
		}
		if s.Role == sessions.RoleAgent {
			agents++
			if up {
				agentsUp++
			}
			// Thousands of agents: only those with a session down.
			if up && countRole(st.Sessions, sessions.RoleAgent) > maxRows {
				continue
			}
		}
		for _, p := range s.Peers {
			name := p.Name
			if name == p.Address {
				name = "" // a peer without a name is named by its address
			}
			rows = append(rows, []string{s.Role + "/" + s.Pod, dash(s.Node), dash(name), p.Address, p.State, dash(p.BFD), age(r.now.Sub(p.Since))})
		}
	}
	if len(rows) > 0 {
		r.table("FROM NODE PEER ADDRESS STATE BFD SINCE", rows)
	}
	if agents > 0 {
		r.printf("  node agents: %d of %d with every session established\n", agentsUp, agents)
	}
}

func countRole(list []sessions.State, role string) int {
	n := 0
	for _, s := range list {
		if s.Role == role {
			n++
		}
	}
	return n
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *renderer) nodes(st *Status) {
	n := st.Nodes
	r.printf("\nNodes:        %d of %d may carry LoadBalancer traffic\n", n.Eligible, n.Total)
	if len(n.Excluded) == 0 {
		return
	}
	var rows [][]string
	for i, e := range n.Excluded {
		if i == maxRows {
			rows = append(rows, []string{fmt.Sprintf("(%d more: -o json)", len(n.Excluded)-maxRows), ""})
			break
		}
		rows = append(rows, []string{e.Name, strings.Join(e.Reasons, "; ")})
	}
	r.table("EXCLUDED WHY", rows)
}

func (r *renderer) services(st *Status) {
	s := st.Services
	r.printf("\nServices:     %s: %d announced, %d pending\n", plural(s.Total, "LoadBalancer Service", "LoadBalancer Services"), s.Announced, len(s.Pending))
	if len(s.Pending) == 0 {
		return
	}
	var rows [][]string
	for i, p := range s.Pending {
		if i == maxRows {
			rows = append(rows, []string{fmt.Sprintf("(%d more: -o json)", len(s.Pending)-maxRows), "", "", ""})
			break
		}
		rows = append(rows, []string{p.Namespace + "/" + p.Name, dash(strings.Join(p.Addresses, ",")), p.Reason, p.Message})
	}
	r.table("PENDING ADDRESSES REASON MESSAGE", rows)
}

// next says what to look at, from what the status found wrong.
func (r *renderer) next(st *Status) {
	var hints []string
	if st.Leader == nil || st.Leader.Expired {
		hints = append(hints, "No replica leads: nothing allocates or writes conditions. See the replicas' logs: kubectl -n "+st.Namespace+" logs -l "+replicaSelector)
	}
	if st.Config.Error != "" {
		hints = append(hints, "The config cannot be read: the replicas run with the last config they loaded; fix the ConfigMap (docs/configuration.md)")
	}
	if st.Nodes.NoneWhy != "" {
		hints = append(hints, "No node may carry LoadBalancer traffic: "+st.Nodes.NoneWhy)
	}
	if sessionDown(st.Sessions) {
		hints = append(hints, "A BGP session is not established: check the router's side and the peer's address and ASN (docs/operating.md)")
	}
	if len(st.Services.Pending) > 0 {
		p := st.Services.Pending[0]
		hints = append(hints, fmt.Sprintf("Pending Services: their conditions and Events say more: kubectl -n %s describe service %s", p.Namespace, p.Name))
	}
	for _, w := range st.Warnings {
		hints = append(hints, "Could not read: "+w)
	}
	if len(hints) == 0 {
		return
	}
	r.printf("\nNext:\n")
	for _, h := range hints {
		r.printf("  - %s\n", h)
	}
}

func sessionDown(list []sessions.State) bool {
	for _, s := range list {
		for _, p := range s.Peers {
			if !p.Up {
				return true
			}
		}
	}
	return false
}
