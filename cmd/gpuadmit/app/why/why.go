package why

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
)

// formats are the -o formats of why: a table, or its one document.
var formats = []string{output.FormatTable, output.FormatJSON, output.FormatYAML, output.FormatJSONPath}

type options struct {
	output string
	setup  setup.Flags
}

// NewCmd is the `gpuadmit why` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "why KIND/NAME [-n NAMESPACE] [-o table|json|yaml|jsonpath=TEMPLATE]",
		Short: "Say why a workload of the cluster has fewer pods than it wants",
		Long: `Say why a Deployment, ReplicaSet, StatefulSet, Job or CronJob of the
live cluster is short: the pods it wants, those that exist and those that
run; the last denial of its pods that gpuadmit recorded as an Event (on
the workload, or on its ReplicaSet or Job); one pod's GPU demand; what the
missing pods need under each limit of the namespace against what is left
of it today (limit less used less reserved), and so what would have to be
freed or raised, naming the ResourceQuota; and the gang its pods wait in,
if any. Exit 0 when the workload has every pod it wants, 1 when it is
short, 2 on error. The Events are informational: anyone allowed to
create Events in the namespace can write one.`,
		Example: `  # why has deployment web fewer pods than replicas?
  gpuadmit why deployment/web -n team-a

  # the same, as JSON
  gpuadmit why deploy/web -n team-a -o json`,
		Annotations: map[string]string{source.ReadsCluster: "true"},
		Args:        cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseTarget(args)
			if err != nil {
				return err
			}
			out, err := output.ParseCmd(cmd, o.output, formats)
			if err != nil {
				return err
			}
			return source.Unreachable(c, run(c, cmd, o, kind, name, out))
		},
	}
	setup.FlagsOn(cmd, &o.setup, false)
	output.Flag(cmd, &o.output, output.FormatTable, formats)
	return cmd
}

// run reads the workload and the namespace's usage and prints the report;
// a short workload exits 1.
func run(c *cmdline.CLI, cmd *cobra.Command, o options, kind, name string, out output.Output) error {
	ctx := cmd.Context()
	warn := func(w string) { fmt.Fprintf(c.Stderr, "%s: warning: %s\n", cmd.CommandPath(), w) }
	src := source.Of(c, "", warn)
	kube, err := src.Gpuadmit()
	if err != nil {
		return err
	}
	ns := *c.Kube.Namespace
	if ns == "" {
		if ns, err = src.Namespace(); err != nil {
			return err
		}
	}
	st, err := setup.New(ctx, o.setup, kube, false, c.Stderr)
	if err != nil {
		return err
	}
	st.Say(cmd, o.setup, true, false, c.Stderr)
	ch, err := source.ChargingOf(st.Cfg)
	if err != nil {
		return err
	}
	led, reserved, err := src.Ledger(ctx, ch, []string{ns}, true)
	if err != nil {
		return err
	}
	var dc dynamic.Interface
	if cfg, err := c.Kube.ToRESTConfig(); err == nil {
		dc, _ = dynamic.NewForConfig(cfg)
	}
	r, err := explain(ctx, kube, dc, ns, kind, name, led.Snapshot(reserved).Namespaces[ns], ch.Families)
	if err != nil {
		return err
	}
	if err := out.Write(c.Stdout, r, func(w io.Writer, _ bool) error { return printReport(w, r) }); err != nil {
		return err
	}
	if r.Missing > 0 {
		return cmdline.ExitCode(1)
	}
	return nil
}
