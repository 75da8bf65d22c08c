package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/metal-ccm/metal-ccm/pkg/config"
	"github.com/metal-ccm/metal-ccm/pkg/migrate"
)

// The migrate command is a subcommand of the manager's own, so that the
// one binary of the image converts: an operator switching over runs the
// version that will read the config it prints.

// migrateOptions are the flags every converter takes.
type migrateOptions struct {
	files      []string
	kubeconfig string
	namespace  string
	output     string
	report     string
}

func (o *migrateOptions) addFlags(fss *cliflag.NamedFlagSets, defaultNamespace string) {
	in := fss.FlagSet("input")
	in.StringArrayVarP(&o.files, "filename", "f", nil, "A YAML or JSON file of the objects to convert (several documents, or a List, as kubectl get -o yaml prints); repeatable; - reads standard input.")
	in.StringVar(&o.kubeconfig, "kubeconfig", "", "Read the objects from the cluster of this kubeconfig (its current context), besides the files.")
	in.StringVar(&o.namespace, "namespace", defaultNamespace, "The namespace the objects are read from in the cluster.")
	out := fss.FlagSet("output")
	out.StringVarP(&o.output, "output", "o", "", "Write the cloud-config to this file. Default: standard output.")
	out.StringVar(&o.report, "report", "", "Write the report of what has no equivalent to this file. Default: standard error.")
}

// converter reads the objects of the cluster and converts them all.
type converter struct {
	source  string // what the objects are, for the header and errors
	command string // the command line that converts, for the header
	cluster func(ctx context.Context, client dynamic.Interface, namespace string) ([]migrate.Object, error)
	convert func([]migrate.Object) (*config.CloudConfig, *migrate.Report, error)
}

func newMigrateCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Convert another LoadBalancer implementation's configuration into the cloud-config",
		Long: "Convert another LoadBalancer implementation's configuration into the metal provider's cloud-config,\n" +
			"and report what has no equivalent (docs/migration.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newMetalLBCommand(), newKubeVIPCommand())
	setHelp(cmd, cliflag.NamedFlagSets{})
	return cmd
}

// setHelp prints the command's own flag sets, as the manager's help does,
// instead of the manager's flags that it would otherwise inherit.
func setHelp(cmd *cobra.Command, fss cliflag.NamedFlagSets) {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "Usage:\n  %s\n", cmd.UseLine())
		if cmd.HasAvailableSubCommands() {
			fmt.Fprintf(w, "\nCommands:\n")
			for _, c := range cmd.Commands() {
				if c.IsAvailableCommand() {
					fmt.Fprintf(w, "  %-10s %s\n", c.Name(), c.Short)
				}
			}
		}
		cliflag.PrintSections(w, fss, 0)
	}
	cmd.SetUsageFunc(func(c *cobra.Command) error { usage(c.OutOrStderr()); return nil })
	cmd.SetHelpFunc(func(c *cobra.Command, _ []string) {
		fmt.Fprintf(c.OutOrStdout(), "%s\n\n", c.Long)
		usage(c.OutOrStdout())
	})
}

// run reads the objects, converts them, and writes the config and the
// report. A config the project's loader refuses is not written: the error
// names each field.
func (c *converter) run(ctx context.Context, o *migrateOptions, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(o.files) == 0 && o.kubeconfig == "" {
		return errors.New("nothing to read: give -f FILE (- for standard input) or --kubeconfig")
	}
	var objs []migrate.Object
	for _, f := range o.files {
		read, err := readFile(f, stdin)
		if err != nil {
			return err
		}
		objs = append(objs, read...)
	}
	if o.kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		client, err := dynamic.NewForConfig(rc)
		if err != nil {
			return fmt.Errorf("--kubeconfig: %w", err)
		}
		read, err := c.cluster(ctx, client, o.namespace)
		if err != nil {
			return fmt.Errorf("read %s from the cluster: %w", c.source, err)
		}
		objs = append(objs, read...)
	}
	cfg, rep, err := c.convert(objs)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Converted from %s by %s.\n# What has no equivalent is in its report; docs/migration.md has the steps.\n", c.source, c.command)
	out, renderErr := migrate.Render(cfg, header)
	if err := writeTo(o.report, stderr, rep.Write); err != nil {
		return err
	}
	if renderErr != nil {
		return renderErr
	}
	return writeTo(o.output, stdout, func(w io.Writer) error {
		_, err := w.Write(out)
		return err
	})
}

func readFile(name string, stdin io.Reader) ([]migrate.Object, error) {
	if name == "-" {
		return migrate.ReadObjects(stdin, "standard input")
	}
	f, err := os.Open(name) //nolint:gosec // the operator's -f flag
	if err != nil {
		return nil, fmt.Errorf("-f: %w", err)
	}
	defer func() { _ = f.Close() }()
	return migrate.ReadObjects(f, name)
}

// writeTo writes with write to the file at path, or to def when path is
// empty.
func writeTo(path string, def io.Writer, write func(io.Writer) error) error {
	if path == "" {
		return write(def)
	}
	f, err := os.Create(path) //nolint:gosec // the operator's --output or --report flag
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := write(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
