package app

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// auditOptions are audit's flags.
type auditOptions struct {
	stateFlags
	output string
}

// auditOutput is `gpuadmit audit`'s JSON (docs/cli.md): every limit a
// namespace's used + reserved passes, by namespace, and how many
// namespaces were checked.
type auditOutput struct {
	Over       []overLimit `json:"over"`
	Namespaces int         `json:"namespaces"`
	// only is the namespace of -n ("" for every one).
	only string
}

func (c *cli) auditCmd() *cobra.Command {
	var o auditOptions
	formats := []string{formatTable, formatJSON, formatYAML, formatJSONPath}
	cmd := &cobra.Command{
		Use:   "audit [--state STATE.yaml] [-n NAMESPACE | -A] [-o table|json|yaml|jsonpath=TEMPLATE]",
		Short: "List the namespaces whose GPU usage is over a limit (exit 1 when any is)",
		Long: `List the namespaces whose used + reserved GPU usage passes a limit of their
ResourceQuotas, as Gatekeeper's audit lists what admission would refuse
now: a quota lowered (or created) under usage already admitted. Admission
never passes a limit, but nothing evicts what a lowered limit no longer
covers. Each line names the namespace, the resource, what is used and
reserved (memory in MiB), the limit and the ResourceQuota that sets it.

Every namespace unless -n (with or without --state). Exit 1 when a
namespace is over, 0 when none is (the table then says so).`,
		Example: `  # every namespace of the cluster of the current context
  gpuadmit audit

  # one namespace of a dump, as JSON
  gpuadmit audit --state state.yaml -n team-a -o json`,
		Annotations: map[string]string{readsCluster: "true"},
		Args:        noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := parseOutput(o.output, formats)
			if err != nil {
				return err
			}
			return c.reading(cmd, o.stateFlags, func() error { return c.audit(cmd, o, out) })
		},
	}
	stateFlagsOn(cmd, &o.stateFlags, "every namespace (the default; -A wins over -n, as in kubectl)")
	outputFlag(cmd, &o.output, formatTable, formats)
	return cmd
}

func (c *cli) audit(cmd *cobra.Command, o auditOptions, out output) error {
	v, err := c.readView(cmd, o.stateFlags, true, true)
	if err != nil {
		return err
	}
	s := v.snapshot()
	v.warnProblems(s)
	a := auditReport(s, v.ch.families, v.ns)
	if err := out.write(c.stdout, a, func(bool) error { return printAudit(c.stdout, a) }); err != nil {
		return err
	}
	if len(a.Over) > 0 {
		return exitCode(1)
	}
	return nil
}

// auditReport lists the limits each namespace of s passes, namespaces by
// name.
func auditReport(s ledger.Snapshot, fams []effective.Family, only string) auditOutput {
	a := auditOutput{Over: []overLimit{}, Namespaces: len(s.Namespaces), only: only}
	for _, name := range sortedNamespaces(s) {
		for _, o := range ledger.OverLimits(s.Namespaces[name], fams) {
			a.Over = append(a.Over, overLimit{Namespace: name, Family: o.Family, Resource: o.Resource, Used: o.Used,
				Reserved: o.Reserved, Charged: o.Charged(), Limit: o.Limit, Quota: o.Quota, Key: o.Key})
		}
	}
	return a
}

// printAudit writes `audit -o table`: a row per limit passed, or a line
// saying none is.
func printAudit(w io.Writer, a auditOutput) error {
	if len(a.Over) == 0 {
		var err error
		if a.only != "" {
			_, err = fmt.Fprintf(w, "namespace %s is within its GPU limits\n", a.only)
		} else {
			_, err = fmt.Fprintf(w, "no namespace is over its GPU limits (%d checked)\n", a.Namespaces)
		}
		return err
	}
	t := newTable(w)
	fmt.Fprintln(t, "NAMESPACE\tRESOURCE\tUSED\tRESERVED\tLIMIT\tQUOTA")
	for _, o := range a.Over {
		fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%d\t%s\n", o.Namespace, o.Resource, o.Used, o.Reserved, o.Limit, orDash(o.Quota))
	}
	return t.Flush()
}
