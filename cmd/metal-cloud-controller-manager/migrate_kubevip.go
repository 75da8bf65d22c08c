package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
	"github.com/metal-ccm/metal-ccm/pkg/migrate/kubevip"
)

func newKubeVIPCommand() *cobra.Command {
	o := &migrateOptions{}
	var name, announce string
	c := &converter{
		source:  "kube-vip-cloud-provider's ConfigMap",
		command: "metal-cloud-controller-manager migrate kube-vip",
		cluster: func(ctx context.Context, client dynamic.Interface, namespace string) ([]migrate.Object, error) {
			return migrate.ReadNamed(ctx, client, namespace, name, kubevip.ConfigMaps)
		},
	}
	cmd := &cobra.Command{
		Use:   "kube-vip [-f FILE]... [--kubeconfig FILE]",
		Short: "Convert kube-vip-cloud-provider's ConfigMap",
		Long: "Convert kube-vip-cloud-provider's ConfigMap (cidr-<namespace>, range-<namespace>, their -global forms,\n" +
			"allow-share-<namespace>, interface-<namespace>, search-order, skip-end-ips-in-cidr), read from a file or\n" +
			"from the cluster, into the cloud-config, written to standard output, and report what has no\n" +
			"equivalent, each item naming the key, on standard error.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p := config.Protocol(announce)
			if p != config.ProtocolL2 && p != config.ProtocolBGP {
				return fmt.Errorf("--announce %q: want %s or %s", announce, config.ProtocolL2, config.ProtocolBGP)
			}
			c.convert = func(objs []migrate.Object) (*config.CloudConfig, *migrate.Report, error) {
				return kubevip.Convert(objs, kubevip.Options{Announce: p})
			}
			return c.run(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fss := cliflag.NamedFlagSets{}
	o.addFlags(&fss, kubevip.DefaultNamespace)
	fs := fss.FlagSet("kube-vip")
	fs.StringVar(&name, "name", kubevip.DefaultName, "The ConfigMap's name in the cluster.")
	fs.StringVar(&announce, "announce", string(config.ProtocolL2), "How kube-vip announced the addresses, which the ConfigMap does not say: L2 (its ARP mode) or BGP (its BGP mode; add bgp.asn and bgp.peers by hand).")
	for _, f := range fss.FlagSets {
		cmd.Flags().AddFlagSet(f)
	}
	setHelp(cmd, fss)
	return cmd
}
