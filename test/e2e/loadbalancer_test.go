package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/bgp/community"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// TestLoadBalancerOverBGP is the path of a LoadBalancer Service from
// allocation to a client's request through a real router.
func TestLoadBalancerOverBGP(t *testing.T) {
	// Weighted ECMP changes nothing for BIRD, which ignores link bandwidth.
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 2, PoolFields: []string{"weightedECMP: true"}})
	if _, err := lab.Exec(lab.Router, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1"); err != nil {
		t.Fatal(err)
	}
	registerLabNodes(t, lab)
	// This replica runs with nothing but deploy/'s least-privilege roles.
	kubeconfig, err := cp.LeastPrivilegeKubeconfig(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ccm := startReplicaAs(t, lab, 0, kubeconfig, "cloud-controller-manager", "198.18.100.0/24", "2001:db8:100::/120")
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	v4 := lab.NodeAddrs(netlab.IPv4)
	v6 := lab.NodeAddrs(netlab.IPv6)
	waitEstablished(t, lab, time.Minute, lab.SpeakerAddrs(netlab.IPv4)[0], lab.SpeakerAddrs(netlab.IPv6)[0])

	vip := servedVIP(t, lab, ns, "web")
	answered := map[string]int{}
	for range 30 {
		body, err := lab.ClientGet(context.Background(), netlab.VIPURL(vip))
		if err != nil {
			t.Fatalf("request to the VIP: %v", err)
		}
		answered[body]++
	}
	if len(answered) < 2 {
		t.Errorf("30 requests were all answered by %v: no ECMP", answered)
	}
	t.Logf("requests per node: %v", answered)

	t.Run("metrics", func(t *testing.T) {
		m, err := cp.Metrics(context.Background(), ccm)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`metal_ccm_bgp_session_up{peer="198.18.10.1",state="established"} 1`,
			`metal_ccm_bgp_session_up{peer="2001:db8:10::1",state="established"} 1`,
			`metal_ccm_bgp_announced_prefixes 1`,
			`metal_ccm_pool_addresses{family="IPv4",pool="default"} 256`,
			`metal_ccm_pool_addresses_used{family="IPv4",pool="default"} 1`,
			`metal_ccm_allocations_total{result="ok"}`,
		} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
	})

	t.Run("the conditions and summary are written with the least-privilege roles", func(t *testing.T) {
		svc := framework.WaitServiceCondition(t, client, ns, "web", svcstatus.TypeAnnounced, metav1.ConditionTrue, svcstatus.ReasonAnnounced, 30*time.Second)
		if got := svc.Annotations[annotation.Summary]; !strings.Contains(got, vip.String()+" BGP via 3 nodes") {
			t.Errorf("%s is %q", annotation.Summary, got)
		}
	})
	t.Run("the sessions' Lease is written with the least-privilege roles", func(t *testing.T) {
		var want []string
		for _, f := range []netlab.Family{netlab.IPv4, netlab.IPv6} {
			want = append(want, `(?m)^  replica/`+regexp.QuoteMeta(ccm.Name)+` +- +- +`+regexp.QuoteMeta(netlab.RouterAddr(f).String())+` +established `)
		}
		cp.WaitStatus(t, []string{"-n", metav1.NamespaceSystem, "--lease-name", "cloud-controller-manager"}, want...)
	})
	t.Run("externalTrafficPolicy Local narrows the next hops", func(t *testing.T) {
		framework.CreateLoadBalancer(t, client, ns, "local", framework.Local)
		lvip := waitVIPs(t, ns, "local", 1)[0]
		endpointsOn(t, ns, "local", lab.NodeName(1))
		waitRoute(t, lab, lvip, v4[1])
		// 2 endpoints on node 0, 1 on node 2: the paths carry link
		// bandwidth 2 and 1 (weightedECMP), which BIRD ignores: equal
		// weights in its kernel route.
		endpointsOn(t, ns, "local", lab.NodeName(0), lab.NodeName(0), lab.NodeName(2))
		waitRoute(t, lab, lvip, v4[0], v4[2])
		if r, _, err := lab.Route(netlab.HostPrefix(lvip)); err != nil || !slices.Equal(r.Weights, []int{1, 1}) {
			t.Errorf("BIRD's route to %s: weights %v (%v), want equal-cost [1 1]", lvip, r.Weights, err)
		}
		// BIRD got each path's community as the replica wrote it.
		want := map[netip.Addr][]string{v4[0]: {birdLinkBandwidth(2)}, v4[2]: {birdLinkBandwidth(1)}}
		got := map[netip.Addr][]string{}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			routes, err := lab.BirdRoutes(netlab.HostPrefix(lvip), "")
			if err != nil {
				t.Fatal(err)
			}
			clear(got)
			for _, r := range routes {
				got[r.NextHop] = r.ExtCommunities
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("BIRD's paths for %s carry %v, want %v", lvip, got, want)
			}
		}
	})
	t.Run("dual-stack and IPv6", func(t *testing.T) {
		framework.CreateLoadBalancer(t, client, ns, "dual", framework.DualStack)
		ips := waitVIPs(t, ns, "dual", 2)
		waitRoute(t, lab, ips[0], v4...)
		waitRoute(t, lab, ips[1], v6...)
		if err := lab.ServeVIP(ips[1]); err != nil {
			t.Fatal(err)
		}
		if _, err := lab.ClientGet(context.Background(), netlab.VIPURL(ips[1])); err != nil {
			t.Errorf("request to the IPv6 VIP: %v", err)
		}
	})
	t.Run("a NotReady node leaves, a deleted node too", func(t *testing.T) {
		setReady(t, lab.NodeName(2), false)
		waitRoute(t, lab, vip, v4[0], v4[1])
		setReady(t, lab.NodeName(2), true)
		waitRoute(t, lab, vip, v4...)
		if err := client.CoreV1().Nodes().Delete(context.Background(), lab.NodeName(1), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRoute(t, lab, vip, v4[0], v4[2])
	})
	t.Run("deleting the Service withdraws its route", func(t *testing.T) {
		if err := client.CoreV1().Services(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitRoute(t, lab, vip)
	})
	if f := regexp.MustCompile(`(?i).*forbidden.*`).FindAllString(ccm.Log(), 5); len(f) > 0 {
		t.Errorf("deploy/'s ClusterRole refused the CCM something:\n%v", f)
	}
}

// TestLeaderKillLosesNoRequest kills the leading replica with SIGKILL while a
// client requests a VIP in a loop: every replica announces, so the router
// keeps a path, and the new leader goes on allocating.
func TestLeaderKillLosesNoRequest(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 3, Speakers: 2})
	registerLabNodes(t, lab)
	a := startReplica(t, lab, 0, "e2e-kill", "198.18.110.0/24", "2001:db8:110::/120")
	b := startReplica(t, lab, 1, "e2e-kill", "198.18.110.0/24", "2001:db8:110::/120")
	ns := framework.NewNamespace(t, client, framework.NamespaceName(t))
	v4 := lab.NodeAddrs(netlab.IPv4)
	waitEstablished(t, lab, time.Minute, lab.SpeakerAddrs(netlab.IPv4)...)
	vip := servedVIP(t, lab, ns, "web")

	loop := lab.StartRequests(vip)
	time.Sleep(time.Second)
	leader, follower := a, b
	if b.Leads() {
		leader, follower = b, a
	}
	leader.Kill()
	// The follower takes over and allocates for a new Service.
	framework.CreateLoadBalancer(t, client, ns, "after")
	after := waitVIPs(t, ns, "after", 1)[0]
	waitRoute(t, lab, after, v4...)
	time.Sleep(2 * time.Second)
	sent, failed, errs := loop.Stop()
	if !follower.Leads() {
		t.Errorf("the follower never led")
	}
	if got := waitVIPs(t, ns, "web", 1)[0]; got != vip {
		t.Errorf("the Service's address changed over the failover: %s -> %s", vip, got)
	}
	t.Logf("%d requests during the failover, %d failed", sent, failed)
	if failed != 0 || sent < 50 {
		t.Errorf("%d of %d requests failed: %v", failed, sent, errs)
	}
}

// birdLinkBandwidth is the link bandwidth community of a path to a node
// with n endpoints as BIRD shows it, "(unknown 0x4004, AS, value)": an
// extended community of a type it has no name for, its value the
// bandwidth's IEEE 754 bits as a decimal number.
func birdLinkBandwidth(n int) string {
	b := community.ForEndpoints(netlab.DefaultSpeakerASN, n).Bytes()
	return fmt.Sprintf("unknown 0x%x:%d:%d", binary.BigEndian.Uint16(b[:2]), binary.BigEndian.Uint16(b[2:4]), binary.BigEndian.Uint32(b[4:]))
}
