package netlab

import (
	"fmt"
	"strings"
	"text/template"
)

// lsFRRTorTemplate is an FRR 8.4 ToR's bgpd config for nodes that announce
// themselves (bgp.announceFrom: Nodes): the FRR twin of birdTorConfig and
// the example the leaf-spine docs give (they may quote TorConfig of a lab
// with an FRR ToR). zebra runs with its defaults; it installs the ECMP
// routes in the kernel.
//
// The nodes connect from any address of the rack's subnet (listen range:
// the ToR needs no line per node, and never dials them). FRR receives
// ADD-PATH paths by default and 8.4 cannot refuse them
// (disable-addpath-rx came in a later release); with one session per node
// there is one path per node either way.
var lsFRRTorTemplate = template.Must(template.New("tor").Parse(`! ToR of rack {{.Rack}} (test/netlab leaf-spine lab), FRR 8.4
frr defaults traditional
hostname tor{{.Rack}}
!
! the nodes get nothing from the ToR: their default route points to it
route-map NONE deny 10
!
router bgp {{.TorASN}}
 bgp router-id {{.RouterID}}
 ! accept eBGP routes without an inbound policy (FRR drops them by default)
 no bgp ebgp-requires-policy
 ! a session carries the family of its address only
 no bgp default ipv4-unicast
 ! one ECMP route across the nodes, also when each node has its own ASN
 bgp bestpath as-path multipath-relax
 ! the nodes: one session per node, from any address of the rack's subnet
 neighbor NODES peer-group
 neighbor NODES remote-as {{.NodeASN}}
{{- if .BFD}}
 ! BFD with the nodes, bfdd's profile "nodes" (300 ms × 3)
 neighbor NODES bfd profile nodes
{{- end}}
{{- if .Password}}
 neighbor NODES password {{.Password}}
{{- end}}
 bgp listen range {{.Subnet4}} peer-group NODES
 neighbor NODES6 peer-group
 neighbor NODES6 remote-as {{.NodeASN}}
{{- if .BFD}}
 neighbor NODES6 bfd profile nodes
{{- end}}
{{- if .Password}}
 neighbor NODES6 password {{.Password}}
{{- end}}
 bgp listen range {{.Subnet6}} peer-group NODES6
 ! the spine
 neighbor {{.Spine4}} remote-as {{.SpineASN}}
 neighbor {{.Spine6}} remote-as {{.SpineASN}}
 !
 address-family ipv4 unicast
  ! the rack's subnet, for the other racks
  network {{.Subnet4}}
  maximum-paths 64
  neighbor NODES activate
  neighbor NODES route-map NONE out
  neighbor {{.Spine4}} activate
 exit-address-family
 !
 address-family ipv6 unicast
  network {{.Subnet6}}
  maximum-paths 64
  neighbor NODES6 activate
  neighbor NODES6 route-map NONE out
  neighbor {{.Spine6}} activate
 exit-address-family
exit
`))

// lsFRRBfddConfig is an FRR ToR's bfdd config with BFD: the profile its
// node peer groups use, the agents' 300 ms × 3.
const lsFRRBfddConfig = `! bfdd of a ToR (test/netlab leaf-spine lab), FRR 8.4
bfd
 profile nodes
  receive-interval 300
  transmit-interval 300
  detect-multiplier 3
 exit
exit
`

// lsFRRBfddDebug comes before lsFRRBfddConfig in the lab: a failing test's
// router log then says which sessions bfdd made and deleted, and which
// packets it could not match to one.
const lsFRRBfddDebug = `debug bfd peer
debug bfd network
`

// frrTorConfig renders lsFRRTorTemplate for ToR r.
func (ls *LeafSpine) frrTorConfig(r int) (string, error) {
	o := &ls.Opts
	var b strings.Builder
	err := lsFRRTorTemplate.Execute(&b, map[string]any{
		"Rack":     r,
		"TorASN":   o.TorASN[r],
		"RouterID": LeafSpineTorAddr(IPv4, r),
		"NodeASN":  o.NodeASN,
		"Password": o.Password,
		"Subnet4":  LeafSpineNodeSubnet(IPv4, r),
		"Subnet6":  LeafSpineNodeSubnet(IPv6, r),
		"Spine4":   LeafSpineSpineAddr(IPv4, r),
		"Spine6":   LeafSpineSpineAddr(IPv6, r),
		"SpineASN": o.SpineASN,
		"BFD":      o.BFD,
	})
	if err != nil {
		return "", fmt.Errorf("netlab FRR ToR config: %w", err)
	}
	return b.String(), nil
}
