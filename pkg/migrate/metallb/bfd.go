package metallb

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// peerBFD maps the BFDProfile a BGPPeer names to the peer's bfd: the
// intervals and the multiplier, each within this project's bounds (a
// value outside is set to the nearest and reported); echo, passive mode
// and the minimum TTL have no equivalent and are reported on the profile.
func (c *converter) peerBFD(r, name string, peer *config.BGPPeer) {
	var prof *bfdProfile
	for _, b := range c.in.bfdProfiles {
		if b.Metadata.Name == name {
			prof = b
		}
	}
	if prof == nil {
		c.rep.Add(r, "spec.bfdProfile", "%s: no such BFDProfile: the peer runs no BFD", name)
		return
	}
	pr := ref(KindBFDProfile, &prof.object)
	s := &prof.Spec
	interval := func(field string, ms *uint32) metav1.Duration {
		if ms == nil {
			return metav1.Duration{}
		}
		d := time.Duration(*ms) * time.Millisecond
		if b := min(max(d, limits.MinBFDInterval), limits.MaxBFDInterval); b != d {
			c.rep.Add(pr, "spec."+field, "%s is outside %s to %s: %s", d, limits.MinBFDInterval, limits.MaxBFDInterval, b)
			d = b
		}
		return metav1.Duration{Duration: d}
	}
	bfd := &config.BFD{ReceiveInterval: interval("receiveInterval", s.ReceiveInterval), TransmitInterval: interval("transmitInterval", s.TransmitInterval)}
	if m := s.DetectMultiplier; m != nil {
		bfd.Multiplier = min(max(int(*m), limits.MinBFDMultiplier), limits.MaxBFDMultiplier)
		if bfd.Multiplier != int(*m) {
			c.rep.Add(pr, "spec.detectMultiplier", "%d is outside %d to %d: %d", *m, limits.MinBFDMultiplier, limits.MaxBFDMultiplier, bfd.Multiplier)
		}
	}
	peer.BFD = bfd
}

// reportBFDProfiles reports, once per profile, what of it has no
// equivalent.
func (c *converter) reportBFDProfiles() {
	for _, b := range c.in.bfdProfiles {
		r, s := ref(KindBFDProfile, &b.object), &b.Spec
		if (s.EchoMode != nil && *s.EchoMode) || s.EchoInterval != nil {
			c.rep.Add(r, "spec.echoMode", "no echo function: the peers run asynchronous BFD (the intervals) only")
		}
		if s.PassiveMode != nil && *s.PassiveMode {
			c.rep.Add(r, "spec.passiveMode", "no passive mode: the speaker sends its control packets from the start")
		}
		if s.MinimumTTL != nil && *s.MinimumTTL != 254 {
			c.rep.Add(r, "spec.minimumTtl", "%d: no equivalent: single-hop sessions take only TTL 255, multihop any", *s.MinimumTTL)
		}
	}
}
