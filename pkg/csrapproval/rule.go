// Package csrapproval approves the kubelets' serving certificates: a
// kubernetes.io/kubelet-serving CertificateSigningRequest whose requester is
// the node itself and whose names and addresses are exactly ones the
// provider knows for that node. Nothing else is approved, and nothing is
// ever denied: a request that does not pass stays pending for a person (or
// another approver), with a Warning Event that says why.
package csrapproval

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// Errors of Check: why a request is not approved.
var (
	ErrNotKubeletServing = errors.New("not a kubelet serving certificate request")
	ErrNotTheNode        = errors.New("the requester is not the node the certificate is for")
	ErrUnknownNode       = errors.New("no such node")
	ErrBadRequest        = errors.New("the certificate request cannot be read")
	ErrForeignName       = errors.New("a name or address the provider does not know for the node")
	ErrBadUsage          = errors.New("usages other than a serving certificate's")
)

const nodeUserPrefix = "system:node:"

// allowedUsages are a serving certificate's; server auth is required.
var allowedUsages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth}

// NodeOf is the node a kubelet serving request is from, by its requester;
// ok is false for any other request.
func NodeOf(csr *certv1.CertificateSigningRequest) (string, bool) {
	if csr.Spec.SignerName != certv1.KubeletServingSignerName {
		return "", false
	}
	name, ok := strings.CutPrefix(csr.Spec.Username, nodeUserPrefix)
	return name, ok && name != ""
}

// Check says whether csr may be approved for node (nil: it may). node's
// status addresses are what the provider set for it (the node controller
// writes them from the provider's answer); they and the node's name are
// every name and address the certificate may hold.
func Check(csr *certv1.CertificateSigningRequest, node *v1.Node) error {
	name, ok := NodeOf(csr)
	if !ok {
		return ErrNotKubeletServing
	}
	if node == nil || node.Name != name {
		return fmt.Errorf("%w: %s", ErrUnknownNode, name)
	}
	if !nodes.Initialized(node) {
		// Its addresses are the provider's only once it is initialized.
		return fmt.Errorf("%w: %s is not initialized yet", ErrUnknownNode, name)
	}
	if !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return fmt.Errorf("%w: %s is not in the group system:nodes", ErrNotTheNode, csr.Spec.Username)
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return fmt.Errorf("%w: %s", ErrBadUsage, u)
		}
	}
	if !slices.Contains(csr.Spec.Usages, certv1.UsageServerAuth) {
		return fmt.Errorf("%w: no server auth", ErrBadUsage)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return fmt.Errorf("%w: no PEM CERTIFICATE REQUEST", ErrBadRequest)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if err := req.CheckSignature(); err != nil {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if req.Subject.CommonName != nodeUserPrefix+name || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return fmt.Errorf("%w: subject %q, want CN=%s%s, O=system:nodes", ErrNotTheNode, req.Subject.String(), nodeUserPrefix, name)
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return fmt.Errorf("%w: e-mail or URI names", ErrForeignName)
	}
	if len(req.DNSNames) == 0 && len(req.IPAddresses) == 0 {
		return fmt.Errorf("%w: no name or address at all", ErrForeignName)
	}
	names, addrs := known(node)
	for _, d := range req.DNSNames {
		if !slices.Contains(names, d) {
			return fmt.Errorf("%w: DNS name %s", ErrForeignName, d)
		}
	}
	for _, ip := range req.IPAddresses {
		a, ok := netip.AddrFromSlice(ip)
		if !ok || !slices.Contains(addrs, a.Unmap()) {
			return fmt.Errorf("%w: IP address %s", ErrForeignName, ip)
		}
	}
	return nil
}

// known are the names and addresses the provider knows for node: its name,
// and the addresses of its status.
func known(node *v1.Node) (names []string, addrs []netip.Addr) {
	names = []string{node.Name}
	for _, a := range node.Status.Addresses {
		switch a.Type {
		case v1.NodeInternalIP, v1.NodeExternalIP:
			if ip, err := netip.ParseAddr(a.Address); err == nil {
				addrs = append(addrs, ip.Unmap())
			}
		case v1.NodeHostName, v1.NodeInternalDNS, v1.NodeExternalDNS:
			names = append(names, a.Address)
		}
	}
	return names, addrs
}

// decided reports whether the request is approved or denied already.
func decided(csr *certv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certv1.CertificateApproved || c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed {
			return true
		}
	}
	return false
}
