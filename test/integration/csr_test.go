package integration

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"slices"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/metal-ccm/metal-ccm/pkg/csrapproval"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestKubeletServingCSRs: with nodes.kubeletServing.approveCSRs, a node's own
// kubelet serving request for its known name and address is approved; one
// with an address the provider does not know, and one a node makes for
// another node's name, stay pending with a Warning Event. The requests are
// made as the nodes (impersonated), so the API server sets their requester.
func TestKubeletServingCSRs(t *testing.T) {
	cfg := writeConfig(t, `nodes:
  kubeletServing: {approveCSRs: true}
  inventory:
  - name: csr-a
    addresses: [{type: InternalIP, address: 198.18.3.20}, {type: Hostname, address: csr-a.example}]
  - name: csr-b
    addresses: [{type: InternalIP, address: 198.18.3.21}]
`)
	// The nodes may create requests, as the default binding of a cluster
	// with the Node authorizer lets them.
	framework.BindNodeRole(t, client, "test-nodes-create-csrs")
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "csr-a", true, "198.18.3.20")
	registerNode(t, "csr-b", true, "198.18.3.21")
	waitInitialized(t, "csr-a", 30*time.Second)
	waitInitialized(t, "csr-b", 30*time.Second)

	good := requestServing(t, "csr-a", "csr-a", []string{"csr-a", "csr-a.example"}, "198.18.3.20")
	foreign := requestServing(t, "csr-a", "csr-a", []string{"csr-a"}, "198.18.3.20", "198.18.3.99")
	other := requestServing(t, "csr-a", "csr-b", []string{"csr-b"}, "198.18.3.21")

	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, good, metav1.GetOptions{})
		return err == nil && approved(c), nil
	})
	if err != nil {
		t.Fatalf("the node's own request for its known names was not approved: %v", err)
	}
	for _, name := range []string{foreign, other} {
		framework.WaitObjectEvent(t, client, metav1.NamespaceAll, name, csrapproval.ReasonNotApproved, 30*time.Second)
		c, err := client.CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Status.Conditions) > 0 {
			t.Errorf("request %s was decided (%v); want it left pending", name, c.Status.Conditions)
		}
	}
}

// requestServing makes a kubelet serving request as node asNode, for the
// certificate of node forNode with those names and addresses, and deletes
// it when the test ends.
func requestServing(t *testing.T, asNode, forNode string, dns []string, ips ...string) string {
	t.Helper()
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + forNode, Organization: []string{"system:nodes"}}, DNSNames: dns}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	pemReq := framework.CertificateRequest(t, tmpl)
	rc, err := cp.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	rc.Impersonate = rest.ImpersonationConfig{UserName: "system:node:" + asNode, Groups: []string{"system:nodes", "system:authenticated"}}
	as, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "serving-" + forNode + "-"},
		Spec: certv1.CertificateSigningRequestSpec{Request: pemReq,
			SignerName: certv1.KubeletServingSignerName, Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}}}
	made, err := as.CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), made.Name, metav1.DeleteOptions{})
	})
	return made.Name
}

func approved(c *certv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(c.Status.Conditions, func(cond certv1.CertificateSigningRequestCondition) bool {
		return cond.Type == certv1.CertificateApproved
	})
}
