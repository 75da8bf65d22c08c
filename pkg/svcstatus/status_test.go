package svcstatus

import (
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	v4 = netip.MustParseAddr("198.18.100.1")
	v6 = netip.MustParseAddr("2001:db8:100::1")
)

func TestAnnouncement(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a      Announcement
		reason string
		text   string
	}{
		{"bgp announced", Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"n1", "n2"}, Peers: []string{"r1", "r2"}, PeersUp: []string{"r1"}},
			ReasonAnnounced, "198.18.100.1 BGP via 2 nodes (n1,n2) to 1/2 peers up (r1,r2)"},
		{"bgp one node", Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"n1"}, Peers: []string{"r1"}, PeersUp: []string{"r1"}},
			ReasonAnnounced, "198.18.100.1 BGP via 1 node (n1) to 1/1 peers up (r1)"},
		{"no session up", Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"n1"}, Peers: []string{"r1"}},
			ReasonNoSessionUp, "198.18.100.1 BGP via 1 node (n1) to 0/1 peers up (r1)"},
		{"no node", Announcement{Addr: v6, Protocol: BGP, Peers: []string{"r1"}, PeersUp: []string{"r1"}},
			ReasonNoEligibleNode, "2001:db8:100::1 BGP via 0 nodes to 1/1 peers up (r1)"},
		{"no peer", Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"n1"}},
			ReasonNotSentToAnyPeer, "198.18.100.1 BGP to no peer (no BGP peer gets its pool)"},
		{"many nodes", Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"a", "b", "c", "d", "e", "f", "g"}, Peers: []string{"r"}, PeersUp: []string{"r"}},
			ReasonAnnounced, "198.18.100.1 BGP via 7 nodes (a,b,c,d,e,+2) to 1/1 peers up (r)"},
		{"from nodes", Announcement{Addr: v4, Protocol: BGPFromNodes, Nodes: []string{"n1", "n2"}},
			ReasonAnnounced, "198.18.100.1 BGP from 2 nodes (n1,n2)"},
		{"from no node", Announcement{Addr: v4, Protocol: BGPFromNodes},
			ReasonNoEligibleNode, "198.18.100.1 BGP from 0 nodes"},
		{"l2", Announcement{Addr: v4, Protocol: L2, Nodes: []string{"n2"}},
			ReasonAnnounced, "198.18.100.1 L2 answered by n2"},
		{"l2 nobody", Announcement{Addr: v4, Protocol: L2},
			ReasonNoEligibleNode, "198.18.100.1 L2 answered by no node"},
		{"l2 conflict", Announcement{Addr: v4, Protocol: L2, Conflict: "02:00:00:00:00:0f"},
			ReasonL2AddressConflict, "198.18.100.1 L2 answered by no node: held by a host outside the cluster (MAC 02:00:00:00:00:0f)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.a.Reason(); got != tc.reason {
				t.Errorf("Reason() = %q, want %q", got, tc.reason)
			}
			if got := tc.a.String(); got != tc.text {
				t.Errorf("String() = %q, want %q", got, tc.text)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	up := Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"n1"}, Peers: []string{"r1"}, PeersUp: []string{"r1"}}
	down := Announcement{Addr: v6, Protocol: BGP, Nodes: []string{"n1"}, Peers: []string{"r1"}}
	type cond struct {
		status metav1.ConditionStatus
		reason string
	}
	for _, tc := range []struct {
		name      string
		st        State
		allocated cond
		announced *cond // nil: not written
	}{
		{"not synced", State{Known: true}, cond{metav1.ConditionUnknown, ReasonPending}, &cond{metav1.ConditionFalse, ReasonNoAddress}},
		{"refused", State{RefusalReason: "PoolExhausted", RefusalMessage: "no free address", Known: true},
			cond{metav1.ConditionFalse, "PoolExhausted"}, &cond{metav1.ConditionFalse, ReasonNoAddress}},
		{"refused, keeps old addresses", State{RefusalReason: "IPInUse", Addresses: []netip.Addr{v4}, Announcements: []Announcement{up}, Known: true},
			cond{metav1.ConditionFalse, "IPInUse"}, &cond{metav1.ConditionTrue, ReasonAnnounced}},
		{"announced", State{Addresses: []netip.Addr{v4}, Pools: []string{"p"}, Announcements: []Announcement{up}, Known: true},
			cond{metav1.ConditionTrue, ReasonAllocated}, &cond{metav1.ConditionTrue, ReasonAnnounced}},
		{"one family down", State{Addresses: []netip.Addr{v4, v6}, Announcements: []Announcement{up, down}, Known: true},
			cond{metav1.ConditionTrue, ReasonAllocated}, &cond{metav1.ConditionFalse, ReasonNoSessionUp}},
		{"l2 conflict", State{Addresses: []netip.Addr{v4}, Announcements: []Announcement{{Addr: v4, Protocol: L2, Conflict: "unknown"}}, Known: true},
			cond{metav1.ConditionTrue, ReasonAllocated}, &cond{metav1.ConditionFalse, ReasonL2AddressConflict}},
		{"no protocol", State{Addresses: []netip.Addr{v4}, Known: true},
			cond{metav1.ConditionTrue, ReasonAllocated}, &cond{metav1.ConditionFalse, ReasonNotSentToAnyPeer}},
		{"an address in no pool", State{Addresses: []netip.Addr{v4, v6}, Pools: []string{"p", ""}, Announcements: []Announcement{up}, Known: true},
			cond{metav1.ConditionTrue, ReasonAllocated}, &cond{metav1.ConditionFalse, ReasonOutsidePools}},
		{"announcers not synced", State{Addresses: []netip.Addr{v4}, Announcements: []Announcement{up}},
			cond{metav1.ConditionTrue, ReasonAllocated}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.st.Conditions()
			if got[0].Type != TypeAllocated || got[0].Status != tc.allocated.status || got[0].Reason != tc.allocated.reason {
				t.Errorf("allocated = %+v, want %+v", got[0], tc.allocated)
			}
			switch {
			case tc.announced == nil && len(got) != 1:
				t.Errorf("announced written while unknown: %+v", got)
			case tc.announced != nil && (len(got) != 2 || got[1].Type != TypeAnnounced || got[1].Status != tc.announced.status || got[1].Reason != tc.announced.reason):
				t.Errorf("conditions = %+v, want announced %+v", got, *tc.announced)
			}
		})
	}
}

func TestMerge(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	other := metav1.Condition{Type: "example.com/Other", Status: metav1.ConditionTrue, Reason: "X", LastTransitionTime: t0}
	first, changed := Merge([]metav1.Condition{other}, []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionFalse, Reason: ReasonNoSessionUp, Message: "a"}}, t0)
	if !changed || len(first) != 2 || first[0] != other || !first[1].LastTransitionTime.Equal(&t0) {
		t.Fatalf("first merge = %v %+v", changed, first)
	}
	if _, changed := Merge(first, []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionFalse, Reason: ReasonNoSessionUp, Message: "a"}}, t1); changed {
		t.Error("an equal condition changed")
	}
	msg, changed := Merge(first, []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionFalse, Reason: ReasonNoSessionUp, Message: "b"}}, t1)
	if !changed || !msg[1].LastTransitionTime.Equal(&t0) {
		t.Errorf("a new message moved the transition time: %+v", msg[1])
	}
	flip, changed := Merge(first, []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionTrue, Reason: ReasonAnnounced}}, t1)
	if !changed || !flip[1].LastTransitionTime.Equal(&t1) {
		t.Errorf("a new status kept the transition time: %+v", flip[1])
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	cut, _ := Merge(nil, []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionTrue, Reason: ReasonAnnounced, Message: string(long)}}, t1)
	if len(cut[0].Message) != maxMessage {
		t.Errorf("message of %d bytes kept %d", len(long), len(cut[0].Message))
	}
}

func TestNoEligibleNodeMessage(t *testing.T) {
	none := Announcement{Addr: v4, Protocol: BGP, Peers: []string{"r1"}, PeersUp: []string{"r1"}}
	up := Announcement{Addr: v4, Protocol: BGP, Nodes: []string{"n1"}, Peers: []string{"r1"}, PeersUp: []string{"r1"}}
	why := "no eligible node among 3 nodes: 3 labelled node.kubernetes.io/exclude-from-external-load-balancers"
	for _, tc := range []struct {
		name string
		st   State
		want string
	}{
		{"why first", State{Addresses: []netip.Addr{v4}, Announcements: []Announcement{none}, Known: true, NoNodeWhy: why},
			why + "; 198.18.100.1 BGP via 0 nodes to 1/1 peers up (r1)"},
		{"why not known", State{Addresses: []netip.Addr{v4}, Announcements: []Announcement{none}, Known: true},
			"198.18.100.1 BGP via 0 nodes to 1/1 peers up (r1)"},
		{"announced ignores why", State{Addresses: []netip.Addr{v4}, Announcements: []Announcement{up}, Known: true, NoNodeWhy: why},
			"198.18.100.1 BGP via 1 node (n1) to 1/1 peers up (r1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.st.Conditions()[1].Message; got != tc.want {
				t.Errorf("message = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNewNoEligibleNode(t *testing.T) {
	noNode := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionFalse, Reason: ReasonNoEligibleNode, Message: msg}}
	}
	announced := []metav1.Condition{{Type: TypeAnnounced, Status: metav1.ConditionTrue, Reason: ReasonAnnounced, Message: "a"}}
	for _, tc := range []struct {
		name        string
		old, merged []metav1.Condition
		want        string
	}{
		{"first", nil, noNode("why"), "why"},
		{"from announced", announced, noNode("why"), "why"},
		{"new why", noNode("why"), noNode("other"), "other"},
		{"same", noNode("why"), noNode("why"), ""},
		{"announced", noNode("why"), announced, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := newNoEligibleNode(tc.old, tc.merged); got != tc.want {
				t.Errorf("newNoEligibleNode = %q, want %q", got, tc.want)
			}
		})
	}
}
