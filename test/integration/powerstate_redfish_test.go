package integration

import (
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/metal"
	"github.com/metal-ccm/metal-ccm/test/framework"
)

// TestRedfishPowerOffMarksTheNodeShutDown runs the chain with Redfish BMCs
// (the DMTF mockup over TLS, verified against the BMCs' CA): two NotReady
// nodes, one whose BMC is asked with its credentials, one with a wrong
// password. Both machines powered off through their BMCs (Reset ForceOff by
// an independent client), the first gets the shutdown taint and a
// PoweredOff Event; the second, whose BMC refuses the source, only a
// PowerStateUnknown Event and no taint.
func TestRedfishPowerOffMarksTheNodeShutDown(t *testing.T) {
	good := framework.StartRedfishBMC(t, "rf-good", framework.RedfishOptions{})
	refused := framework.StartRedfishBMC(t, "rf-refused", framework.RedfishOptions{})
	cfg := writeConfig(t, fmt.Sprintf(`nodes:
  powerState: {source: redfish, settings: {timeout: 2s, cacheAge: 1s}}
  inventory:
  - name: rf-good
    addresses: [{type: InternalIP, address: 198.18.3.30}]
    powerState: {endpoint: %q, usernameFile: %q, passwordFile: %q, caFile: %q}
  - name: rf-refused
    addresses: [{type: InternalIP, address: 198.18.3.31}]
    powerState: {endpoint: %q, usernameFile: %q, passwordFile: %q, caFile: %q}
`, good.Endpoint, good.UserFile, good.PasswordFile, good.CAFile,
		refused.Endpoint, refused.UserFile, good.PasswordFile, refused.CAFile))
	startCCM(t, framework.CCMOptions{CloudConfig: cfg})
	registerNode(t, "rf-good", false, "198.18.3.30")
	registerNode(t, "rf-refused", false, "198.18.3.31")
	for _, n := range []string{"rf-good", "rf-refused"} {
		waitInitialized(t, n, 30*time.Second)
	}

	refused.Power(t, refused.Systems[0].ID, false)
	good.Power(t, good.Systems[0].ID, false)
	waitNodeTaint(t, "rf-good", shutdownTaint, 30*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "rf-good", metal.ReasonPoweredOff, 10*time.Second)
	framework.WaitObjectEvent(t, client, metav1.NamespaceAll, "rf-refused", metal.ReasonPowerStateUnknown, 10*time.Second)
	n, err := client.CoreV1().Nodes().Get(t.Context(), "rf-refused", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool { return tt.Key == shutdownTaint }) {
		t.Errorf("node rf-refused, whose BMC refused the credentials, got the shutdown taint: %v", n.Spec.Taints)
	}
	if good.Logins() == 0 {
		t.Error("the source asked the BMC without a session")
	}
}
