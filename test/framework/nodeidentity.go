package framework

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// nodeClientCert is a client certificate for the node's own identity,
// system:node:NAME in the group system:nodes, signed by the API server's
// client CA (what a kubelet gets from TLS bootstrapping), and its key, PEM.
func (cp *ControlPlane) nodeClientCert(name string) (certPEM, keyPEM []byte, err error) {
	ca, err := cp.loadClientCA()
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s client certificate: %w", name, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("node %s client certificate: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s client certificate: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("node %s client certificate: %w", name, err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// writeNodeKubeconfig writes a kubeconfig for the node's own identity (a
// client certificate, nodeClientCert) at the relay on port in the node's
// namespace.
func (cp *ControlPlane) writeNodeKubeconfig(path, name string, port int) error {
	certPEM, keyPEM, err := cp.nodeClientCert(name)
	if err != nil {
		return err
	}
	ca, err := os.ReadFile(cp.caFile)
	if err != nil {
		return fmt.Errorf("write node kubeconfig: %w", err)
	}
	user := "system:node:" + name
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{
		Server: fmt.Sprintf("https://127.0.0.1:%d", port), CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write node kubeconfig: %w", err)
	}
	return nil
}

// NodeClient is a client with the node's own identity (its kubelet's
// kubeconfig, NodeIdentity), to the API server on the host's loopback.
func (cp *ControlPlane) NodeClient(n *RealNode) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", n.KubeletKubeconfig())
	if err != nil {
		return nil, fmt.Errorf("node %s client: %w", n.Name, err)
	}
	// The kubeconfig's server is the relay inside the node's namespace.
	cfg.Host = cp.URL
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("node %s client: %w", n.Name, err)
	}
	return cs, nil
}

// BindNodeRole gives the group system:nodes the ClusterRole system:node, as
// the default binding of a cluster with the Node authorizer does (nodes
// create their certificate requests with it), until the test ends.
func BindNodeRole(t testing.TB, cs kubernetes.Interface, name string) {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:node"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:nodes"}}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(context.Background(), crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
}
