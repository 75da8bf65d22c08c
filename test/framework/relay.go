package framework

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// APIPort is the port on which a Relay serves the API server in a network
// namespace.
const APIPort = 6443

// Relay makes the API server, which listens on the host's loopback,
// reachable in a network namespace on port APIPort of every address there:
// a listener made in the namespace whose connections the test process
// forwards to the API server. The API server's certificate is for
// 127.0.0.1, so a client in the namespace that dials 127.0.0.1:APIPort
// verifies it.
type Relay struct {
	cp   *ControlPlane
	ln   net.Listener
	port int
	wg   sync.WaitGroup
}

// RelayAPIServer starts a relay into the network namespace netns (a name
// under /run/netns) on APIPort. Close it when done.
func (cp *ControlPlane) RelayAPIServer(netns string) (*Relay, error) {
	return cp.RelayAPIServerOn(netns, APIPort)
}

// RelayAPIServerOn is RelayAPIServer on another port: a client of its own
// (a node agent) whose traffic to the API server a test can cut apart
// from the kubelet's.
func (cp *ControlPlane) RelayAPIServerOn(netns string, port int) (*Relay, error) {
	ln, err := ListenInNetNS(netns, "tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("API relay into %s: %w", netns, err)
	}
	r := &Relay{cp: cp, ln: ln, port: port}
	target := cp.APIServerAddr()
	r.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.wg.Go(func() { relayConn(c, target) })
		}
	})
	return r, nil
}

// WriteKubeconfig writes a kubeconfig for clients in the namespace: the
// relay's address and the given user and token.
func (r *Relay) WriteKubeconfig(path, user, token string) error {
	return r.cp.writeRelayKubeconfig(path, user, token, r.port)
}

func (cp *ControlPlane) writeRelayKubeconfig(path, user, token string, port int) error {
	c := *cp
	c.URL = "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	return c.WriteKubeconfig(path, user, token)
}

// WriteRelayAdminKubeconfig writes a kubeconfig with the admin's token for
// clients in a namespace that has a relay already (a CCM replica run beside
// a lab node's agent).
func (cp *ControlPlane) WriteRelayAdminKubeconfig(path string) error {
	return cp.writeRelayKubeconfig(path, "admin", cp.adminToken, APIPort)
}

// Close stops accepting; connections in flight end with their peers.
func (r *Relay) Close() { _ = r.ln.Close() }

func relayConn(c net.Conn, target string) {
	defer func() { _ = c.Close() }()
	up, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
}
