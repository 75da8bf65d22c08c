package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
)

// loadClientCA reads the client CA that writeClientCA wrote.
func (cp *ControlPlane) loadClientCA() (*testCA, error) {
	pair, err := tls.LoadX509KeyPair(cp.clientCA, cp.clientCAKey)
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("client CA: %w", err)
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("client CA: not an ECDSA key")
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}, nil
}

// ServedCertificate is the certificate the kubelet serves on addr
// (HOST:10250) in the node's namespace, verified against the cluster CA
// that signs kubelet serving certificates, for the name or address host.
func (cp *ControlPlane) ServedCertificate(ctx context.Context, n *RealNode, addr string) (*x509.Certificate, error) {
	ca, err := cp.loadClientCA()
	if err != nil {
		return nil, fmt.Errorf("served certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("served certificate: %w", err)
	}
	raw, err := DialInNetNS(ctx, n.NetNS, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("served certificate: %w", err)
	}
	c := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: host, MinVersion: tls.VersionTLS12})
	defer func() { _ = c.Close() }()
	if err := c.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("served certificate of %s: %w", addr, err)
	}
	return c.ConnectionState().PeerCertificates[0], nil
}
