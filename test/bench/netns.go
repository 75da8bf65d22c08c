package bench

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"time"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

// benchNetNS is a network namespace of a scenario that runs metal-ccm
// processes (replicas, an agent) apart from the host: only prefix on its
// loopback (every address of it local, and no route out, so nothing the
// processes send leaves the namespace), the API server relayed to
// 127.0.0.1:6443 there with the admin's kubeconfig, and an HTTP client that
// dials inside it.
type benchNetNS struct {
	e          *env
	ns         string
	kubeconfig string
	relay      *framework.Relay
	client     *http.Client
}

// startBenchNetNS makes the namespace ns. On error nothing of it is left.
func startBenchNetNS(e *env, ns string, prefix netip.Prefix, timeout time.Duration) (n *benchNetNS, err error) {
	n = &benchNetNS{e: e, ns: ns}
	if err := ipCmd("netns", "add", ns); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			n.close()
		}
	}()
	// A prefix on the loopback device makes every address of it local
	// (the kernel adds a local route for the whole prefix). Without one
	// (the zero Prefix) the caller gives the namespace its addresses.
	cmds := [][]string{{"-n", ns, "link", "set", "lo", "up"}}
	if prefix.IsValid() {
		cmds = append(cmds, []string{"-n", ns, "addr", "add", prefix.String(), "dev", "lo"})
	}
	for _, args := range cmds {
		if err := ipCmd(args...); err != nil {
			return n, err
		}
	}
	if n.relay, err = e.cp.RelayAPIServer(ns); err != nil {
		return n, fmt.Errorf("bench: %s: %w", ns, err)
	}
	n.kubeconfig = filepath.Join(e.o.Dir, ns+"-kubeconfig")
	if err := n.relay.WriteKubeconfig(n.kubeconfig, "admin", e.token); err != nil {
		return n, fmt.Errorf("bench: %w", err)
	}
	n.client = &http.Client{Timeout: timeout, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a replica's self-signed serving cert, in the scenario's namespace
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return framework.DialInNetNS(ctx, ns, network, addr)
		},
	}}
	return n, nil
}

// close stops the relay and deletes the namespace by name.
func (n *benchNetNS) close() {
	if n.relay != nil {
		n.relay.Close()
	}
	if n.client != nil {
		n.client.CloseIdleConnections()
	}
	if err := ipCmd("netns", "delete", n.ns); err != nil {
		n.e.log.Error(err, "Deleting a bench namespace", "netns", n.ns)
	}
}
