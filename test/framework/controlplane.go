package framework

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Addresses used by the local control plane. Every address of the project's
// tests and examples is in 198.18.0.0/15 or 2001:db8::/32.
const (
	DefaultServiceCIDR = "198.18.200.0/24,2001:db8:200::/112"
	DefaultClusterCIDR = "198.19.0.0/16,2001:db8:19::/56"
)

// Options configure a control plane.
type Options struct {
	// Dir holds data, certificates, kubeconfigs and logs. Required.
	Dir string
	// Detach starts the processes in their own sessions, to outlive the caller.
	Detach bool
	// ServiceCIDR is kube-apiserver's --service-cluster-ip-range.
	ServiceCIDR string
	// KCM starts kube-controller-manager as well, allocating node pod CIDRs
	// from ClusterCIDR.
	KCM         bool
	ClusterCIDR string
	// APIServerArgs are extra kube-apiserver flags.
	APIServerArgs []string
	// RealNodes makes the control plane of a cluster with real kubelets
	// (StartRealNode): kube-controller-manager (KCM is implied) with its
	// node-lifecycle controller, which taints nodes not-ready and marks a
	// node whose kubelet stopped NotReady after NodeMonitorGracePeriod, and
	// kube-scheduler. The API server reaches kubelets on their InternalIP
	// (kubectl logs, exec).
	RealNodes bool
	// KubernetesNodeMonitor runs the node-lifecycle controller of
	// RealNodes with Kubernetes' own node-monitor period and grace period
	// (the flags' defaults) instead of the lab's short ones.
	KubernetesNodeMonitor bool
}

// ControlPlane is a running etcd and kube-apiserver, and optionally a
// kube-controller-manager.
type ControlPlane struct {
	Dir             string
	URL             string
	AdminKubeconfig string
	Etcd, APIServer *Process
	KCM, Scheduler  *Process
	adminToken      string
	caFile          string
	// clientCA signs the real nodes' client certificates (NodeIdentity) and
	// the kubelets' serving certificates (kube-controller-manager's
	// kubernetes.io/kubelet-serving signer), as one cluster CA does in
	// kubeadm's clusters.
	clientCA, clientCAKey string
	etcdURL               string
}

// defaults fills o's CIDRs left empty.
func (o *Options) defaults() {
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = DefaultServiceCIDR
	}
	if o.ClusterCIDR == "" {
		o.ClusterCIDR = DefaultClusterCIDR
	}
}

// StartControlPlane starts etcd and kube-apiserver (RBAC on) on 127.0.0.1 and
// waits until the API server is ready. On error nothing is left running.
func StartControlPlane(ctx context.Context, o Options) (cp *ControlPlane, err error) {
	o.defaults()
	cp = &ControlPlane{Dir: o.Dir}
	defer func() {
		if err != nil {
			cp.Stop()
			cp = nil
		}
	}()
	for _, d := range []string{"etcd", "pki", "logs"} {
		if err := os.MkdirAll(filepath.Join(o.Dir, d), 0o750); err != nil {
			return nil, fmt.Errorf("start control plane: %w", err)
		}
	}
	if err := cp.startEtcd(ctx, o); err != nil {
		return nil, err
	}
	if err := cp.startAPIServer(ctx, o); err != nil {
		return nil, err
	}
	if o.KCM || o.RealNodes {
		if err := cp.StartKCM(ctx, o); err != nil {
			return nil, err
		}
	}
	if o.RealNodes {
		if err := cp.startScheduler(ctx, o); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

func (cp *ControlPlane) startEtcd(ctx context.Context, o Options) error {
	bin, err := Binary("etcd")
	if err != nil {
		return err
	}
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peer := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	cp.Etcd, err = StartProcess("etcd", filepath.Join(o.Dir, "logs", "etcd.log"), o.Detach, bin,
		"--data-dir", filepath.Join(o.Dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer,
		"--unsafe-no-fsync", "--quota-backend-bytes", strconv.Itoa(4<<30))
	if err != nil {
		return err
	}
	cp.etcdURL = client
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return waitHealthy(ctx, cp.Etcd, client+"/health", "")
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, o Options) error {
	bin, err := Binary("kube-apiserver")
	if err != nil {
		return err
	}
	pki := filepath.Join(o.Dir, "pki")
	keyFile, pubFile, err := writeServiceAccountKey(pki)
	if err != nil {
		return err
	}
	clientCA, clientCAKey, err := writeClientCA(pki)
	if err != nil {
		return err
	}
	cp.clientCA, cp.clientCAKey = clientCA, clientCAKey
	cp.adminToken, err = randomToken()
	if err != nil {
		return err
	}
	tokens := filepath.Join(pki, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(cp.adminToken+",admin,admin-uid,system:masters\n"), 0o600); err != nil {
		return fmt.Errorf("write token file: %w", err)
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	cp.URL = "https://127.0.0.1:" + strconv.Itoa(port)
	args := []string{
		"--etcd-servers", cp.etcdURL,
		"--cert-dir", pki,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--advertise-address", "127.0.0.1",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", pubFile,
		"--service-account-signing-key-file", keyFile,
		"--token-auth-file", tokens,
		"--client-ca-file", clientCA,
		"--authorization-mode", "Node,RBAC",
		"--service-cluster-ip-range", o.ServiceCIDR,
		"--endpoint-reconciler-type", "none",
	}
	if o.RealNodes {
		args = append(args, "--kubelet-preferred-address-types", "InternalIP,Hostname")
	}
	cp.APIServer, err = StartProcess("kube-apiserver", filepath.Join(o.Dir, "logs", "kube-apiserver.log"), o.Detach, bin,
		append(args, o.APIServerArgs...)...)
	if err != nil {
		return err
	}
	cp.caFile = filepath.Join(pki, "apiserver.crt")
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := waitHealthy(ctx, cp.APIServer, cp.URL+"/readyz", cp.adminToken); err != nil {
		return err
	}
	cp.AdminKubeconfig = filepath.Join(o.Dir, "kubeconfig")
	return cp.WriteKubeconfig(cp.AdminKubeconfig, "admin", cp.adminToken)
}

// RestartKCM stops kube-controller-manager and starts it again with o's
// flags (o.Dir must be the control plane's), as an operator's change of
// its flags does.
func (cp *ControlPlane) RestartKCM(ctx context.Context, o Options) error {
	o.defaults()
	if cp.KCM != nil {
		cp.KCM.Stop(10 * time.Second)
	}
	return cp.StartKCM(ctx, o)
}

// StartKCM starts kube-controller-manager with the node IPAM controller
// allocating pod CIDRs from o.ClusterCIDR, and the controllers a cluster
// without kubelets can run (with o.RealNodes, every controller).
func (cp *ControlPlane) StartKCM(ctx context.Context, o Options) error {
	bin, err := Binary("kube-controller-manager")
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	// No kubelet posts node status without real nodes: the
	// node-lifecycle controller would turn every registered node NotReady
	// after the grace period.
	controllers := []string{"--controllers", "*,-node-lifecycle-controller"}
	switch {
	case o.RealNodes && o.KubernetesNodeMonitor:
		controllers = []string{"--controllers", "*"}
	case o.RealNodes:
		controllers = []string{"--controllers", "*",
			"--node-monitor-period", "1s", "--node-monitor-grace-period", NodeMonitorGracePeriod.String()}
	}
	cp.KCM, err = StartProcess("kube-controller-manager", filepath.Join(o.Dir, "logs", "kube-controller-manager.log"), o.Detach, bin,
		append([]string{"--kubeconfig", cp.AdminKubeconfig,
			"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
			"--cloud-provider", "external",
			"--allocate-node-cidrs", "--cluster-cidr", o.ClusterCIDR,
			"--node-cidr-mask-size-ipv4", "24", "--node-cidr-mask-size-ipv6", "64",
			"--service-cluster-ip-range", o.ServiceCIDR,
			"--service-account-private-key-file", filepath.Join(cp.Dir, "pki", "sa.key"),
			"--root-ca-file", cp.caFile,
			// An approved kubelet serving request gets its certificate;
			// no other signer is configured.
			"--cluster-signing-kubelet-serving-cert-file", cp.clientCA,
			"--cluster-signing-kubelet-serving-key-file", cp.clientCAKey,
			"--leader-elect=false"}, controllers...)...)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return waitHealthy(ctx, cp.KCM, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", "")
}

// startScheduler starts kube-scheduler, for real nodes.
func (cp *ControlPlane) startScheduler(ctx context.Context, o Options) error {
	bin, err := Binary("kube-scheduler")
	if err != nil {
		return err
	}
	port, err := FreePort()
	if err != nil {
		return err
	}
	cp.Scheduler, err = StartProcess("kube-scheduler", filepath.Join(o.Dir, "logs", "kube-scheduler.log"), o.Detach, bin,
		"--kubeconfig", cp.AdminKubeconfig,
		"--authentication-kubeconfig", cp.AdminKubeconfig, "--authorization-kubeconfig", cp.AdminKubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--leader-elect=false")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	return waitHealthy(ctx, cp.Scheduler, "https://127.0.0.1:"+strconv.Itoa(port)+"/healthz", "")
}

// WriteKubeconfig writes a kubeconfig for this API server with a bearer token.
func (cp *ControlPlane) WriteKubeconfig(path, user, token string) error {
	ca, err := os.ReadFile(cp.caFile)
	if err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: cp.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// RESTConfig is the admin's client configuration.
func (cp *ControlPlane) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load admin kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	return cfg, nil
}

// Client is an admin clientset.
func (cp *ControlPlane) Client() (kubernetes.Interface, error) {
	cfg, err := cp.RESTConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("admin client: %w", err)
	}
	return cs, nil
}

// Processes lists what is running, in the order it was started.
func (cp *ControlPlane) Processes() []*Process {
	var ps []*Process
	for _, p := range []*Process{cp.Etcd, cp.APIServer, cp.KCM, cp.Scheduler} {
		if p != nil {
			ps = append(ps, p)
		}
	}
	return ps
}

// Stop stops kube-scheduler, kube-controller-manager, kube-apiserver and
// etcd by PID.
func (cp *ControlPlane) Stop() {
	ps := cp.Processes()
	for i := len(ps) - 1; i >= 0; i-- {
		ps[i].Stop(5 * time.Second)
	}
}

func writeServiceAccountKey(dir string) (keyFile, pubFile string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", fmt.Errorf("generate service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", fmt.Errorf("marshal service-account key: %w", err)
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return "", "", fmt.Errorf("write service-account key: %w", err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return "", "", fmt.Errorf("write service-account key: %w", err)
	}
	return keyFile, pubFile, nil
}

// writeClientCA writes a CA certificate for --client-ca-file and its key.
// It makes kube-apiserver publish the extension-apiserver-authentication
// ConfigMap that delegated authentication reads, as a real cluster's does,
// and signs the certificates of real nodes that run as themselves.
func writeClientCA(dir string) (certFile, keyFile string, err error) {
	ca, err := newTestCA("metal-ccm-test-client-ca")
	if err != nil {
		return "", "", fmt.Errorf("client CA: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(ca.key)
	if err != nil {
		return "", "", fmt.Errorf("marshal client CA key: %w", err)
	}
	certFile, keyFile = filepath.Join(dir, "client-ca.crt"), filepath.Join(dir, "client-ca.key")
	if err := os.WriteFile(certFile, ca.pem, 0o600); err != nil {
		return "", "", fmt.Errorf("write client CA: %w", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return "", "", fmt.Errorf("write client CA key: %w", err)
	}
	return certFile, keyFile, nil
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate token: %w", err)
	}
	return fmt.Sprintf("%x", b), nil
}
