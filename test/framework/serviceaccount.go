package framework

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ServiceAccountKubeconfig writes a kubeconfig that authenticates with a
// token of the named ServiceAccount (TokenRequest API), valid for an hour.
func (cp *ControlPlane) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	cs, err := cp.Client()
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	path := filepath.Join(cp.Dir, "kubeconfig-"+namespace+"-"+name)
	if err := cp.WriteKubeconfig(path, namespace+"-"+name, tr.Status.Token); err != nil {
		return "", err
	}
	return path, nil
}

// LeastPrivilegeKubeconfig applies deploy/rbac.yaml and writes a kubeconfig
// with nothing but the token of its ServiceAccount. Its Role allows one
// leader-election lease name: cloud-controller-manager.
func (cp *ControlPlane) LeastPrivilegeKubeconfig(ctx context.Context) (string, error) {
	if _, err := cp.Kubectl(ctx, "apply", "-f", filepath.Join(RepoRoot(), "deploy", "rbac.yaml")); err != nil {
		return "", err
	}
	return cp.ServiceAccountKubeconfig(ctx, "kube-system", "metal-cloud-controller-manager")
}
