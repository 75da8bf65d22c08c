package metal

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/csrapproval"
)

// watchCSRs watches the CertificateSigningRequests when the config read at
// start asks for the kubelet serving approval: without it the replicas
// need no right on them, and watch none.
func (c *Cloud) watchCSRs(f informers.SharedInformerFactory) {
	if !c.state.Load().cfg.Nodes.KubeletServing.ApproveCSRs {
		return
	}
	inf := f.Certificates().V1().CertificateSigningRequests()
	c.csrKick = make(chan struct{}, 1)
	kick := func(any) {
		select {
		case c.csrKick <- struct{}{}:
		default:
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: kick, UpdateFunc: func(_, obj any) { kick(obj) }}); err != nil {
		klog.Background().Error(err, "Cannot watch CertificateSigningRequests: kubelet serving certificates will not be approved")
		return
	}
	c.csrs = inf.Lister()
}

// runCSRApproval approves the kubelet serving certificates
// (nodes.kubeletServing.approveCSRs) on the leader until ctx ends.
func (c *Cloud) runCSRApproval(ctx context.Context, client kubernetes.Interface) {
	select {
	case <-ctx.Done():
		return
	case <-c.lb.informed: // SetInformers set the watch up, or not
	}
	if c.csrs == nil {
		return
	}
	a := &csrapproval.Approver{Client: client, CSRs: c.csrs, Nodes: c.nodes, Kick: c.csrKick,
		Event: func(obj runtime.Object, eventType, reason, format string, args ...any) {
			c.eventf(obj, eventType, reason, format, args...)
		}}
	klog.FromContext(ctx).Info("Approving the kubelets' serving certificates that pass the rule (docs/node-lifecycle.md)")
	a.Run(ctx)
}
