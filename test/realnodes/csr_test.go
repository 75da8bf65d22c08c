package realnodes

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/metal-ccm/metal-ccm/pkg/csrapproval"
	"github.com/metal-ccm/metal-ccm/test/framework"
	"github.com/metal-ccm/metal-ccm/test/netlab"
)

// foreignSAN is an address the provider does not know for the node.
const foreignSAN = "198.18.250.250"

// TestKubeletServingCSRsFromRealKubelet runs one real kubelet as its node's
// own identity (system:node:NAME, a client certificate) with
// serverTLSBootstrap, and the CCM with nodes.kubeletServing.approveCSRs and
// the node's addresses in its inventory: the request the kubelet itself
// makes is approved by the CCM, kube-controller-manager signs it, and the
// kubelet serves the certificate on port 10250 for the node's addresses. A
// request the same node makes with an address the provider does not know
// stays pending with a Warning Event.
func TestKubeletServingCSRsFromRealKubelet(t *testing.T) {
	lab := netlab.New(t, netlab.Options{Nodes: 1, Speakers: 1})
	ctx := context.Background()
	archives, pauseRef := testImages(t)
	const name = "csr0"
	ips := labNodeIPs(lab, 0)
	framework.BindNodeRole(t, client, "test-realnodes-system-nodes")
	cfg := writeConfig(t, fmt.Sprintf(`apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
nodes:
  kubeletServing: {approveCSRs: true}
  inventory:
  - name: %s
    addresses: [{type: InternalIP, address: %q}, {type: InternalIP, address: %q}]
`, name, ips[0], ips[1]))
	cp.StartCCMForTest(t, framework.CCMOptions{Name: "ccm-csr", CloudConfig: cfg, Args: []string{
		"--leader-elect-resource-name", "csr", "--allocate-node-cidrs=false", "--configure-cloud-routes=false",
	}})
	t.Cleanup(func() {
		_ = client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		deleteNodeCSRs(name)
	})
	n := cp.StartRealNode(ctx, t, framework.RealNodeOptions{
		Name: name, NetNS: lab.Nodes[0], NodeIPs: ips,
		Images: archives, SandboxImage: pauseRef, NoKubeProxy: true, NodeIdentity: true,
	})

	csr := waitIssued(t, name, 2*time.Minute)
	issuedAfter := time.Since(n.KubeletStarted)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, csr.Name, csrapproval.ReasonApproved, 30*time.Second)
	issued := parseCertificate(t, csr.Status.Certificate)
	t.Logf("the kubelet's serving request %s approved and signed %.1fs after the kubelet started: DNS %v, IP %v",
		csr.Name, issuedAfter.Seconds(), issued.DNSNames, issued.IPAddresses)
	for _, ip := range ips {
		if !slices.ContainsFunc(issued.IPAddresses, func(a net.IP) bool { return a.Equal(net.ParseIP(ip)) }) {
			t.Errorf("the issued certificate has no IP SAN %s: %v", ip, issued.IPAddresses)
		}
	}

	// The kubelet serves the issued certificate on its address (the
	// KubeletConfiguration's, the node's first), verified against the
	// cluster CA for that address.
	addr := net.JoinHostPort(ips[0], "10250")
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := cp.ServedCertificate(ctx, n, addr)
		lastErr = err
		return err == nil && c.SerialNumber.Cmp(issued.SerialNumber) == 0, nil
	})
	if err != nil {
		t.Fatalf("the kubelet does not serve the issued certificate on %s: %v (last: %v)", addr, err, lastErr)
	}
	t.Logf("the kubelet serves it on %s %.1fs after it started", addr, time.Since(n.KubeletStarted).Seconds())

	foreign := requestAsNode(t, n, name, append(ips, foreignSAN))
	ev := framework.WaitObjectEvent(t, client, metav1.NamespaceAll, foreign, csrapproval.ReasonNotApproved, 30*time.Second)
	if ev.Type != v1.EventTypeWarning {
		t.Errorf("event %s is %s, want Warning", ev.Reason, ev.Type)
	}
	c, err := client.CertificatesV1().CertificateSigningRequests().Get(ctx, foreign, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Status.Conditions) > 0 || len(c.Status.Certificate) > 0 {
		t.Errorf("request %s with %s was decided (%v); want it left pending", foreign, foreignSAN, c.Status.Conditions)
	}
	t.Logf("request %s with the foreign address %s left pending: %s", foreign, foreignSAN, ev.Message)
}

// waitIssued waits for the kubelet's own serving request of node name,
// approved by the CCM and signed, and returns it.
func waitIssued(t *testing.T, name string, timeout time.Duration) *certv1.CertificateSigningRequest {
	t.Helper()
	var found *certv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		l, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // retried until the timeout
		}
		for i, c := range l.Items {
			if c.Spec.SignerName != certv1.KubeletServingSignerName || c.Spec.Username != "system:node:"+name || len(c.Status.Certificate) == 0 {
				continue
			}
			if slices.ContainsFunc(c.Status.Conditions, func(cond certv1.CertificateSigningRequestCondition) bool {
				return cond.Type == certv1.CertificateApproved && cond.Reason == csrapproval.ConditionReason
			}) {
				found = &l.Items[i]
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no serving request of %s approved by the CCM and signed: %v", name, err)
	}
	return found
}

// requestAsNode makes a kubelet serving request for node name with those
// addresses, with the node's own client certificate (its kubelet's
// kubeconfig), and returns its name.
func requestAsNode(t *testing.T, n *framework.RealNode, name string, ips []string) string {
	t.Helper()
	as, err := cp.NodeClient(n)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}}, DNSNames: []string{name}}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	csr := &certv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "foreign-" + name + "-"},
		Spec: certv1.CertificateSigningRequestSpec{Request: framework.CertificateRequest(t, tmpl),
			SignerName: certv1.KubeletServingSignerName, Usages: []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageServerAuth}}}
	made, err := as.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if made.Spec.Username != "system:node:"+name {
		t.Fatalf("request %s made by %s, want the node itself", made.Name, made.Spec.Username)
	}
	return made.Name
}

// deleteNodeCSRs deletes every request node name made.
func deleteNodeCSRs(name string) {
	l, err := client.CertificatesV1().CertificateSigningRequests().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, c := range l.Items {
		if c.Spec.Username == "system:node:"+name {
			_ = client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), c.Name, metav1.DeleteOptions{})
		}
	}
}

func parseCertificate(t *testing.T, pemBytes []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatal("no PEM certificate")
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
