package csrapproval

import (
	"context"
	"errors"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
)

// Event reasons on CertificateSigningRequests. They are stable.
const (
	ReasonApproved    = "KubeletServingApproved"
	ReasonNotApproved = "KubeletServingNotApproved"
)

// ConditionReason is the reason of the Approved condition the approver sets.
const ConditionReason = "MetalCCMApproved"

// recheck is how often pending requests are looked at again (a node that
// was not initialized yet may be now).
const recheck = 10 * time.Second

// Approver approves the kubelet serving requests that pass Check; only the
// leader runs it.
type Approver struct {
	Client kubernetes.Interface
	CSRs   certlisters.CertificateSigningRequestLister
	Nodes  corelisters.NodeLister
	// Event records an Event on a request.
	Event func(obj runtime.Object, eventType, reason, format string, args ...any)
	// Kick is signalled when a request may be new.
	Kick <-chan struct{}

	refused map[string]string // request name -> the refusal last recorded
}

// Run looks at the pending requests on every Kick and every recheck until
// ctx ends.
func (a *Approver) Run(ctx context.Context) {
	a.refused = map[string]string{}
	t := time.NewTicker(recheck)
	defer t.Stop()
	for {
		a.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-a.Kick:
		case <-t.C:
		}
	}
}

// Sync looks at every pending kubelet serving request once.
func (a *Approver) Sync(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("csr-approval")
	list, err := a.CSRs.List(labels.Everything())
	if err != nil {
		return
	}
	seen := make(map[string]bool, len(list))
	for _, csr := range list {
		name, ok := NodeOf(csr)
		if !ok || decided(csr) {
			continue
		}
		seen[csr.Name] = true
		node, err := a.Nodes.Get(name)
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err := Check(csr, node); err != nil {
			if msg := err.Error(); a.refused[csr.Name] != msg {
				a.refused[csr.Name] = msg
				a.Event(csr, v1.EventTypeWarning, ReasonNotApproved, "Not approved (left pending): %v", err)
			}
			continue
		}
		if err := a.approve(ctx, csr); err != nil {
			if !errors.Is(err, context.Canceled) {
				logger.Error(err, "Cannot approve a kubelet serving certificate request", "csr", csr.Name, "node", name)
			}
			continue
		}
		delete(a.refused, csr.Name)
		a.Event(csr, v1.EventTypeNormal, ReasonApproved, "Approved: requested by node %s for names and addresses the provider knows for it", name)
	}
	for name := range a.refused {
		if !seen[name] {
			delete(a.refused, name)
		}
	}
}

func (a *Approver) approve(ctx context.Context, csr *certv1.CertificateSigningRequest) error {
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type: certv1.CertificateApproved, Status: v1.ConditionTrue, Reason: ConditionReason,
		Message:        "the node's own request, for names and addresses the cloud provider knows for it",
		LastUpdateTime: metav1.Now(),
	})
	_, err := a.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	return err
}
