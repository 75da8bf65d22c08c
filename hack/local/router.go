package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// startRouter builds the router lab (a BIRD router, one namespace per node and
// a client namespace; see test/netlab) and writes a copy of the example
// config with a bgp section that peers with it.
func startRouter(dir, baseConfig string) (*netlab.Lab, string, error) {
	lab, err := netlab.Start(netlab.Options{Nodes: len(nodes), Speakers: 1})
	if err != nil {
		return nil, "", err
	}
	if _, err := lab.Exec(lab.Router, "sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1"); err != nil {
		_ = lab.Close()
		return nil, "", err
	}
	base, err := os.ReadFile(baseConfig) //nolint:gosec // the repository's example
	if err != nil {
		_ = lab.Close()
		return nil, "", fmt.Errorf("read example config: %w", err)
	}
	bgp := fmt.Sprintf(`routes:
  enabled: true
bgp:
  asn: %d
  peers:
  - {address: %s, asn: %d, localAddress: %s}
  - {address: %q, asn: %d, localAddress: %q}
`, netlab.DefaultSpeakerASN,
		netlab.RouterAddr(netlab.IPv4), netlab.DefaultRouterASN, lab.SpeakerAddrs(netlab.IPv4)[0],
		netlab.RouterAddr(netlab.IPv6), netlab.DefaultRouterASN, lab.SpeakerAddrs(netlab.IPv6)[0])
	path := filepath.Join(dir, "cloud-config.yaml")
	if err := os.WriteFile(path, append(base, []byte(bgp)...), 0o600); err != nil { //nolint:gosec // in the local cluster's own folder
		_ = lab.Close()
		return nil, "", fmt.Errorf("write config: %w", err)
	}
	return lab, path, nil
}

// serveVIPs does kube-proxy's part for the demo: every LoadBalancer address
// that appears is put on each node namespace's loopback, where an HTTP server
// answers with the node's name.
func serveVIPs(ctx context.Context, lab *netlab.Lab, cs kubernetes.Interface) {
	served := map[netip.Addr]bool{}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		list, err := cs.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err == nil {
			for _, s := range list.Items {
				if s.Spec.Type != v1.ServiceTypeLoadBalancer {
					continue
				}
				for _, in := range s.Status.LoadBalancer.Ingress {
					ip, err := netip.ParseAddr(in.IP)
					if err != nil || served[ip] {
						continue
					}
					served[ip] = true
					for i := range lab.Nodes {
						if err := lab.AddLoopbackVIP(i, ip); err != nil {
							fmt.Printf("VIP %s on node %d: %v\n", ip, i, err)
							continue
						}
						if err := lab.ServeHTTP(i, netip.AddrPortFrom(ip, 80).String()); err != nil {
							fmt.Printf("HTTP on %s in node %d: %v\n", ip, i, err)
						}
					}
					fmt.Printf("Serving %s/%s at http://%s/ from every node namespace\n", s.Namespace, s.Name, netip.AddrPortFrom(ip, 80))
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
