package csrapproval

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net"
	"net/url"
	"testing"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/test/framework"
)

func TestCheck(t *testing.T) {
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: v1.NodeStatus{Addresses: []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "198.18.3.1"}, {Type: v1.NodeInternalIP, Address: "2001:db8:3::1"}, {Type: v1.NodeHostName, Address: "n1.example"}}}}
	uninitialized := node.DeepCopy()
	uninitialized.Spec.Taints = []v1.Taint{{Key: "node.cloudprovider.kubernetes.io/uninitialized", Effect: v1.TaintEffectNoSchedule}}
	subject := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	good := &x509.CertificateRequest{Subject: subject, DNSNames: []string{"n1", "n1.example"}, IPAddresses: []net.IP{net.ParseIP("198.18.3.1"), net.ParseIP("2001:db8:3::1")}}
	csr := func(pemReq []byte, mutate func(*certv1.CertificateSigningRequestSpec)) *certv1.CertificateSigningRequest {
		c := &certv1.CertificateSigningRequest{Spec: certv1.CertificateSigningRequestSpec{Request: pemReq, SignerName: certv1.KubeletServingSignerName,
			Username: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"},
			Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth}}}
		if mutate != nil {
			mutate(&c.Spec)
		}
		return c
	}
	with := func(f func(*x509.CertificateRequest)) []byte {
		r := *good
		f(&r)
		return framework.CertificateRequest(t, &r)
	}
	for _, tc := range []struct {
		name string
		csr  *certv1.CertificateSigningRequest
		node *v1.Node
		want error
	}{
		{"the node's own, for its names", csr(framework.CertificateRequest(t, good), nil), node, nil},
		{"another signer", csr(framework.CertificateRequest(t, good), func(s *certv1.CertificateSigningRequestSpec) {
			s.SignerName = certv1.KubeAPIServerClientKubeletSignerName
		}), node, ErrNotKubeletServing},
		{"a user, not a node", csr(framework.CertificateRequest(t, good), func(s *certv1.CertificateSigningRequestSpec) { s.Username = "alice" }), node, ErrNotKubeletServing},
		{"not in system:nodes", csr(framework.CertificateRequest(t, good), func(s *certv1.CertificateSigningRequestSpec) { s.Groups = []string{"system:authenticated"} }), node, ErrNotTheNode},
		{"no such node", csr(framework.CertificateRequest(t, good), nil), nil, ErrUnknownNode},
		{"a node not initialized", csr(framework.CertificateRequest(t, good), nil), uninitialized, ErrUnknownNode},
		{"client auth", csr(framework.CertificateRequest(t, good), func(s *certv1.CertificateSigningRequestSpec) {
			s.Usages = append(s.Usages, certv1.UsageClientAuth)
		}), node, ErrBadUsage},
		{"no server auth", csr(framework.CertificateRequest(t, good), func(s *certv1.CertificateSigningRequestSpec) {
			s.Usages = []certv1.KeyUsage{certv1.UsageDigitalSignature}
		}), node, ErrBadUsage},
		{"not PEM", csr([]byte("garbage"), nil), node, ErrBadRequest},
		{"another node's subject", csr(with(func(r *x509.CertificateRequest) { r.Subject.CommonName = "system:node:n2" }), nil), node, ErrNotTheNode},
		{"another organization", csr(with(func(r *x509.CertificateRequest) { r.Subject.Organization = []string{"system:masters"} }), nil), node, ErrNotTheNode},
		{"a foreign address", csr(with(func(r *x509.CertificateRequest) { r.IPAddresses = append(r.IPAddresses, net.ParseIP("198.18.3.99")) }), nil), node, ErrForeignName},
		{"a foreign name", csr(with(func(r *x509.CertificateRequest) { r.DNSNames = append(r.DNSNames, "kubernetes.default") }), nil), node, ErrForeignName},
		{"an e-mail", csr(with(func(r *x509.CertificateRequest) { r.EmailAddresses = []string{"n1@example.org"} }), nil), node, ErrForeignName},
		{"a URI", csr(with(func(r *x509.CertificateRequest) { r.URIs = []*url.URL{{Scheme: "spiffe", Host: "n1"}} }), nil), node, ErrForeignName},
		{"no name at all", csr(with(func(r *x509.CertificateRequest) { r.DNSNames, r.IPAddresses = nil, nil }), nil), node, ErrForeignName},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.csr, tc.node)
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("Check = %v, want %v", err, tc.want)
			}
		})
	}
}
