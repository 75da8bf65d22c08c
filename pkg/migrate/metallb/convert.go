// Package metallb converts MetalLB's custom resources (IPAddressPool,
// BGPPeer, BGPAdvertisement, L2Advertisement, Community, BFDProfile) into
// the cloud-config, reporting what has no equivalent.
package metallb

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// Options are the choices MetalLB's resources do not make.
type Options struct {
	// AnnounceFrom is who announces over BGP. Nodes is what MetalLB's
	// speakers do (a session from every node, each node its own next hop);
	// Replicas needs a router with ADD-PATH (docs/migration.md).
	AnnounceFrom config.AnnounceFrom
	// L2SecretFile is l2.secretFile when a pool is announced with L2.
	L2SecretFile string
	// MemberlistPort is l2.memberlistPort when a pool is announced with L2:
	// another port than MetalLB's speakers' lets both run side by side.
	MemberlistPort uint16
	// PasswordDir is the folder of the peers' password files (the chart
	// mounts its Secret metal-ccm-bgp there).
	PasswordDir string
}

// input is the objects sorted by kind, each kind in input order.
type input struct {
	pools       []*ipAddressPool
	peers       []*bgpPeer
	bgpAds      []*bgpAdvertisement
	l2Ads       []*l2Advertisement
	communities []*communityResource
	bfdProfiles []*bfdProfile
}

// Convert turns MetalLB's objects into a cloud-config and the report of
// what it could not carry. Objects of other groups or kinds are reported and
// skipped. The config is not validated here: migrate.Render does that.
func Convert(objs []migrate.Object, opts Options) (*config.CloudConfig, *migrate.Report, error) {
	if opts.AnnounceFrom == "" {
		opts.AnnounceFrom = config.AnnounceFromNodes
	}
	if opts.L2SecretFile == "" {
		opts.L2SecretFile = migrate.DefaultL2SecretFile
	}
	if opts.PasswordDir == "" {
		opts.PasswordDir = migrate.DefaultPasswordDir
	}
	rep := &migrate.Report{}
	in, err := sortObjects(objs, rep)
	if err != nil {
		return nil, nil, err
	}
	c := &converter{in: in, opts: opts, rep: rep}
	cfg := &config.CloudConfig{APIVersion: config.APIVersion, Kind: config.Kind}
	c.checkPoolSelectors()
	c.convertPools(&cfg.LoadBalancer)
	c.convertPeers(&cfg.BGP)
	c.convertBGPAdvertisements(cfg)
	c.convertL2Advertisements(cfg)
	c.checkAnnounced(cfg)
	c.reportBFDProfiles()
	return cfg, rep, nil
}

// converter carries the state of one conversion: the input, and how
// MetalLB's names map to the output's.
type converter struct {
	in   input
	opts Options
	rep  *migrate.Report
	// poolIndex maps an IPAddressPool's name to its index in the output.
	poolIndex map[string]int
	// poolOf is the IPAddressPool of each output pool.
	poolOf []*ipAddressPool
	// peerName maps a BGPPeer's name to the output peer's name.
	peerName map[string]string
	// peerIBGP tells, by output peer name, whether the session is iBGP.
	peerIBGP map[string]bool
	// announced holds the MetalLB pool names some advertisement selects.
	announced map[string]bool
}

func sortObjects(objs []migrate.Object, rep *migrate.Report) (input, error) {
	var in input
	for i := range objs {
		o := &objs[i]
		group, _, _ := strings.Cut(o.APIVersion, "/")
		if group != Group {
			rep.Add(o.Ref(), "", "not a MetalLB resource (%s): skipped", o.APIVersion)
			continue
		}
		var (
			v   any
			add func()
		)
		switch o.Kind {
		case KindIPAddressPool:
			p := &ipAddressPool{}
			v, add = p, func() { in.pools = append(in.pools, p) }
		case KindBGPPeer:
			p := &bgpPeer{}
			v, add = p, func() { in.peers = append(in.peers, p) }
		case KindBGPAdvertisement:
			a := &bgpAdvertisement{}
			v, add = a, func() { in.bgpAds = append(in.bgpAds, a) }
		case KindL2Advertisement:
			a := &l2Advertisement{}
			v, add = a, func() { in.l2Ads = append(in.l2Ads, a) }
		case KindCommunity:
			cm := &communityResource{}
			v, add = cm, func() { in.communities = append(in.communities, cm) }
		case KindBFDProfile:
			b := &bfdProfile{}
			v, add = b, func() { in.bfdProfiles = append(in.bfdProfiles, b) }
		default:
			rep.Add(o.Ref(), "", "a MetalLB kind the converter does not read (status or FRR objects have no part in the config): skipped")
			continue
		}
		unknown, err := o.DecodeInto(v)
		if err != nil {
			return input{}, fmt.Errorf("decode: %w", err)
		}
		for _, f := range unknown {
			rep.Add(o.Ref(), f, "a field the converter does not know: no equivalent, check it by hand")
		}
		add()
	}
	// The objects' order is their names', whatever order they were read
	// in (a file's, or the API server's), so that a file and the cluster
	// it was taken from convert alike.
	sortByName(in.pools)
	sortByName(in.peers)
	sortByName(in.bgpAds)
	sortByName(in.l2Ads)
	sortByName(in.communities)
	sortByName(in.bfdProfiles)
	return in, nil
}

// named is every input type: each embeds object.
type named interface{ meta() *object }

func (o *object) meta() *object { return o }

func sortByName[T named](objs []T) {
	slices.SortStableFunc(objs, func(a, b T) int {
		return cmp.Or(cmp.Compare(a.meta().Metadata.Namespace, b.meta().Metadata.Namespace),
			cmp.Compare(a.meta().Metadata.Name, b.meta().Metadata.Name))
	})
}

// ref names a MetalLB object in the report.
func ref(kind string, o *object) string {
	if o.Metadata.Namespace == "" {
		return kind + " " + o.Metadata.Name
	}
	return kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}
