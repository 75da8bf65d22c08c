package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/metallb"
)

// metalLBOptions are the choices MetalLB's resources do not make.
type metalLBOptions struct {
	announceFrom   string
	memberlistPort uint16
}

func newMetalLBCommand() *cobra.Command {
	o, mo := &migrateOptions{}, &metalLBOptions{}
	c := &converter{
		source:  "MetalLB's resources",
		command: "metal-cloud-controller-manager migrate metallb",
		cluster: func(ctx context.Context, client dynamic.Interface, namespace string) ([]migrate.Object, error) {
			return migrate.ReadCluster(ctx, client, namespace, metallb.Resources)
		},
	}
	cmd := &cobra.Command{
		Use:   "metallb [-f FILE]... [--kubeconfig FILE]",
		Short: "Convert MetalLB's IPAddressPools, BGPPeers, BGPAdvertisements, L2Advertisements, Communities and BFDProfiles",
		Long: "Convert MetalLB's IPAddressPools, BGPPeers, BGPAdvertisements, L2Advertisements, Communities and\n" +
			"BFDProfiles (metallb.io v1beta1, v1beta2 for BGPPeer), read from files or from the cluster, into the\n" +
			"cloud-config, written to standard output, and report what has no equivalent, each item naming the\n" +
			"MetalLB object and field, on standard error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from := config.AnnounceFrom(mo.announceFrom)
			if from != config.AnnounceFromNodes && from != config.AnnounceFromReplicas {
				return fmt.Errorf("--announce-from %q: want %s or %s", mo.announceFrom, config.AnnounceFromNodes, config.AnnounceFromReplicas)
			}
			c.convert = func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
				return metallb.Convert(objs, metallb.Options{AnnounceFrom: from, MemberlistPort: mo.memberlistPort})
			}
			return c.run(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fss := cliflag.NamedFlagSets{}
	o.addFlags(&fss, metallb.DefaultNamespace)
	fs := fss.FlagSet("MetalLB")
	fs.StringVar(&mo.announceFrom, "announce-from", string(config.AnnounceFromNodes), "bgp.announceFrom: Nodes, as MetalLB's speakers do (a session from every node, each its own next hop, no router change), or Replicas (the CCM replicas announce every node as next hop: the router needs ADD-PATH).")
	fs.Uint16Var(&mo.memberlistPort, "memberlist-port", memberlistPortBeside, "l2.memberlistPort when a pool is announced with L2. Another port than MetalLB's speakers' 7946 lets the node agents start on nodes where a speaker still runs; 0 leaves the default (7946).")
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	setHelp(cmd, fss)
	return cmd
}

// memberlistPortBeside is the default l2.memberlistPort of a converted
// config: one above MetalLB's 7946, on which its speakers' memberlist
// listens on every node.
const memberlistPortBeside = 7947
