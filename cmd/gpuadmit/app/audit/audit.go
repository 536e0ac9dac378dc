package audit

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/top"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/view"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// auditOptions are audit's flags.
type auditOptions struct {
	view.StateFlags
	output string
}

// auditOutput is `gpuadmit audit`'s JSON (docs/cli.md): every limit a
// namespace's used + reserved passes, every namespace checked, by name
// (as usage's and top's), with the limits it passes, and the ResourceQuota
// keys not enforced as written.
type auditOutput struct {
	Over       []top.OverLimit           `json:"over"`
	Namespaces map[string]auditNamespace `json:"namespaces"`
	// NotEnforced are the ResourceQuota keys gpuadmit does not enforce as
	// written (ledger.ProblemQuota) or at all (ledger.ProblemUngoverned).
	NotEnforced []ledger.Problem `json:"notEnforced,omitempty"`
	// TeamOver are the limits of the team quotas (GPUClusterQuotas)
	// counting the namespaces checked that the team's (or one of its
	// users') used + reserved passes, quota by quota; TeamNotEnforced the
	// team quotas' keys not enforced as written.
	TeamOver        []auditTeamOver  `json:"teamOver,omitempty"`
	TeamNotEnforced []ledger.Problem `json:"teamNotEnforced,omitempty"`
	// Budgets are the GPU-hour budgets counting the namespaces checked
	// that are near their limit (the lowest warning threshold), spent,
	// overrun, or have keys not enforced.
	Budgets []view.Budget `json:"budgets,omitempty"`
	// only is the namespace of -n ("" for every one).
	only string
}

// auditTeamOver is a limit of a team quota (or, with user, of one of its
// users) passed.
type auditTeamOver struct {
	Quota string `json:"quota"`
	summary.TeamOver
}

// auditNamespace is one namespace checked: the limits it passes (none:
// within its limits).
type auditNamespace struct {
	Over []top.OverLimit `json:"over"`
}

// Rows are the limits passed, a row each, named by namespace (-o name
// lists the namespaces over a limit).
func (a auditOutput) Rows() []output.Row {
	rows := make([]output.Row, len(a.Over))
	for i, o := range a.Over {
		rows[i] = output.Row{Kind: "namespace", Name: o.Namespace, Object: o}
	}
	return rows
}

// NewCmd is the `gpuadmit audit` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var o auditOptions
	formats := []string{output.FormatTable, output.FormatJSON, output.FormatYAML, output.FormatJSONPath, output.FormatName, output.FormatColumns}
	cmd := &cobra.Command{
		Use:   "audit [--state STATE.yaml] [-n NAMESPACE | -A] [-o table|json|yaml|jsonpath=TEMPLATE]",
		Short: "List the namespaces whose GPU usage is over a limit (exit 1 when any is)",
		Long: `List the namespaces whose used + reserved GPU usage passes a limit of their
ResourceQuotas, as Gatekeeper's audit lists what admission would refuse
now: a quota lowered (or created) under usage already admitted. Admission
never passes a limit, but nothing evicts what a lowered limit no longer
covers. Each line names the namespace, the resource, what is used and
reserved (memory in MiB), the limit and the ResourceQuota that sets it.
Then the ResourceQuota keys not enforced as written: a limit nothing
enforces (a resource no governed device family has), a memory limit in
bytes or a value that is not whole (enforced rounded down).

Then the GPU-hour budgets (GPUBudget, GPUClusterBudget) counting the
namespaces checked that are near their limit (the lowest warning
threshold), spent (admission denies new GPU pods until the window ends)
or overrun (running pods burned past the limit: admission never stops
them).

Every namespace unless -n (with or without --state). Exit 1 when a
namespace is over, a ResourceQuota key is not enforced as written, or a
budget is overrun or has a key not enforced; 0 otherwise (the table then
says so).`,
		Example: `  # every namespace of the cluster of the current context
  gpuadmit audit

  # one namespace of a dump, as JSON
  gpuadmit audit --state state.yaml -n team-a -o json`,
		Annotations: map[string]string{source.ReadsCluster: "true"},
		Args:        cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := output.ParseCmd(cmd, o.output, formats)
			if err != nil {
				return err
			}
			return view.Reading(c, cmd, o.StateFlags, func() error { return run(c, cmd, o, out) })
		},
	}
	view.StateFlagsOn(cmd, &o.StateFlags, "every namespace (the default; -A wins over -n, as in kubectl)")
	output.Flag(cmd, &o.output, output.FormatTable, formats)
	return cmd
}

// run reads the state and prints the namespaces over a limit, as -o says.
func run(c *cmdline.CLI, cmd *cobra.Command, o auditOptions, out output.Output) error {
	v, err := view.ReadView(c, cmd, o.StateFlags, true, true)
	if err != nil {
		return err
	}
	s := v.Snapshot()
	v.WarnProblems(s)
	a := auditReport(s, v.Ch.Families, v.Ns)
	a.teams(v.Teams(), v.Ch.Families)
	a.budgets(v.Budgets(c.Clock.Now()))
	if err := out.Write(c.Stdout, a, func(w io.Writer, _ bool) error { return printAudit(w, a) }); err != nil {
		return err
	}
	if len(a.Over) > 0 || len(a.NotEnforced) > 0 || len(a.TeamOver) > 0 || len(a.TeamNotEnforced) > 0 || a.budgetsFail() {
		return cmdline.ExitCode(1)
	}
	return nil
}

// auditReport lists the limits each namespace of s passes, namespaces by
// name.
func auditReport(s ledger.Snapshot, fams []effective.Family, only string) auditOutput {
	a := auditOutput{Over: []top.OverLimit{}, Namespaces: map[string]auditNamespace{}, only: only}
	for _, name := range source.SortedNamespaces(s) {
		an := auditNamespace{Over: []top.OverLimit{}}
		for _, o := range ledger.OverLimits(s.Namespaces[name], fams) {
			an.Over = append(an.Over, top.OverLimit{Namespace: name, Family: o.Family, Resource: o.Resource, Used: o.Used,
				Reserved: o.Reserved, Charged: o.Charged(), Limit: o.Limit, Quota: o.Quota, Key: o.Key})
		}
		a.Over = append(a.Over, an.Over...)
		a.Namespaces[name] = an
	}
	for _, p := range s.Problems {
		if p.Kind == ledger.ProblemQuota || p.Kind == ledger.ProblemUngoverned {
			a.NotEnforced = append(a.NotEnforced, p)
		}
	}
	return a
}

// teams adds the limits teams passes and their keys not enforced.
func (a *auditOutput) teams(teams []summary.Team, fams []effective.Family) {
	for _, t := range teams {
		for _, o := range t.OverLimits(fams) {
			a.TeamOver = append(a.TeamOver, auditTeamOver{Quota: t.Quota.Name, TeamOver: o})
		}
		a.TeamNotEnforced = append(a.TeamNotEnforced, t.Quota.Problems...)
	}
}

// printTeams writes the rows of the team limits passed and the team
// quotas' keys not enforced.
func printTeams(w io.Writer, a auditOutput) error {
	if len(a.TeamOver) > 0 {
		fmt.Fprintln(w, "\nGPUClusterQuota limits passed:")
		t := output.NewTable(w)
		fmt.Fprintln(t, "QUOTA\tUSER\tRESOURCE\tUSED\tRESERVED\tLIMIT")
		for _, o := range a.TeamOver {
			fmt.Fprintf(t, "%s\t%s\t%s\t%d\t%d\t%d\n", o.Quota, output.OrDash(o.User), o.Key, o.Used, o.Reserved, o.Limit)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	if len(a.TeamNotEnforced) > 0 {
		fmt.Fprintln(w, "\nGPUClusterQuota keys not enforced as written:")
		for _, p := range a.TeamNotEnforced {
			if _, err := fmt.Fprintf(w, "  %s\n", p); err != nil {
				return err
			}
		}
	}
	return nil
}

// printAudit writes `audit -o table`: a row per limit passed, or a line
// saying none is, then a line per ResourceQuota key not enforced as
// written.
func printAudit(w io.Writer, a auditOutput) error {
	if err := printOver(w, a); err != nil {
		return err
	}
	if len(a.NotEnforced) == 0 {
		return printTeamsAndBudgets(w, a)
	}
	if _, err := fmt.Fprintln(w, "\nResourceQuota keys not enforced as written:"); err != nil {
		return err
	}
	for _, p := range a.NotEnforced {
		if _, err := fmt.Fprintf(w, "  %s\n", p); err != nil {
			return err
		}
	}
	return printTeamsAndBudgets(w, a)
}

// printTeamsAndBudgets writes the team quotas' rows, then the budgets'.
func printTeamsAndBudgets(w io.Writer, a auditOutput) error {
	if err := printTeams(w, a); err != nil {
		return err
	}
	return printBudgets(w, a)
}

// printOver writes the rows of the limits passed, or a line saying none
// is.
func printOver(w io.Writer, a auditOutput) error {
	if len(a.Over) == 0 {
		var err error
		if a.only != "" {
			_, err = fmt.Fprintf(w, "namespace %s is within its GPU limits\n", a.only)
		} else {
			_, err = fmt.Fprintf(w, "no namespace is over its GPU limits (%d checked)\n", len(a.Namespaces))
		}
		return err
	}
	t := output.NewTable(w)
	fmt.Fprintln(t, "NAMESPACE\tRESOURCE\tUSED\tRESERVED\tLIMIT\tQUOTA")
	for _, o := range a.Over {
		fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%d\t%s\n", o.Namespace, o.Resource, o.Used, o.Reserved, o.Limit, output.OrDash(o.Quota))
	}
	return t.Flush()
}
