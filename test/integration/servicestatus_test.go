package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/metal-ccm/metal-ccm/pkg/annotation"
	"github.com/metal-ccm/metal-ccm/pkg/svcstatus"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestServiceConditionsWithoutRouter checks the conditions the leader
// writes when nothing announces (a config without BGP peers nor L2) and
// when an allocation is refused, and that fixing the Service clears the
// refusal. test/e2e TestServiceStatus covers the causes that need a router.
func TestServiceConditionsWithoutRouter(t *testing.T) {
	startCCM(t, framework.CCMOptions{CloudConfig: writeConfig(t, lbConfig(170)+"serviceStatus:\n  minInterval: 1s\n")})
	ns := newNamespace(t)
	const wait = 30 * time.Second

	createLB(t, ns, "web")
	ip := waitIPs(t, ns, "web", 1, wait)[0]
	svc := framework.WaitServiceCondition(t, client, ns, "web", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonNotSentToAnyPeer, wait)
	if got, want := svc.Annotations[annotation.Summary], ip+" BGP to no peer (no BGP peer gets its pool)"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	if c, _ := framework.ServiceCondition(svc, svcstatus.TypeAllocated); c.Status != metav1.ConditionTrue || c.Message != ip+" from pool default" || c.ObservedGeneration != svc.Generation {
		t.Errorf("allocated: %+v", c)
	}

	createLB(t, ns, "bad", framework.WithAnnotation("metal-ccm.io/pool", "nope"))
	svc = framework.WaitServiceCondition(t, client, ns, "bad", svcstatus.TypeAllocated, metav1.ConditionFalse, "UnknownPool", wait)
	if c, _ := framework.ServiceCondition(svc, svcstatus.TypeAllocated); !strings.Contains(c.Message, "nope") {
		t.Errorf("the refusal's message does not name the pool: %+v", c)
	}
	framework.WaitServiceCondition(t, client, ns, "bad", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonNoAddress, wait)

	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"metal-ccm.io/pool": "tiny"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Services(ns).Patch(context.Background(), "bad", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.WaitServiceCondition(t, client, ns, "bad", svcstatus.TypeAllocated, metav1.ConditionTrue, svcstatus.ReasonAllocated, wait)
	framework.WaitServiceCondition(t, client, ns, "bad", svcstatus.TypeAnnounced, metav1.ConditionFalse, svcstatus.ReasonNotSentToAnyPeer, wait)
}
