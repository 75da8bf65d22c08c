package bgp

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

func TestReplicaSpeakerConfig(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `apiVersion: metal-ccm.io/v1alpha1
kind: CloudConfig
routes: {enabled: true, clusterCIDRs: [198.19.0.0/16]}
bgp:
  asn: 64512
  peers:
  - {address: 198.18.10.1, asn: 64500, localAddress: 198.18.10.2, passwordFile: %s}
  - {address: 198.18.10.9, asn: 64501, podRoutes: false, gracefulRestart: {enabled: false}}
`, pw))
	if err != nil {
		t.Fatal(err)
	}
	b, err := speakerConfig(&cfg.BGP, &cfg.Routes)
	if err != nil {
		t.Fatal(err)
	}
	p0, p1 := b.Peers[0], b.Peers[1]
	if b.RouterID.String() != "198.18.10.2" {
		t.Errorf("router ID %s, want the first IPv4 peer's local address", b.RouterID)
	}
	if p0.Password != "s3cret" || !p0.GracefulRestart || p0.HoldTime.String() != "1m30s" || p0.Port != 179 || len(p0.Deny) != 0 {
		t.Errorf("peer 0: %+v", p0)
	}
	if p1.GracefulRestart || len(p1.Deny) != 1 || p1.Deny[0].String() != "198.19.0.0/16" {
		t.Errorf("peer 1: %+v", p1)
	}
}
