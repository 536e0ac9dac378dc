package top

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/usage"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/view"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// The orders of top --sort-by: largest first, but by name.
const (
	sortUsed    = "used"
	sortMemory  = "memory"
	sortGPU     = "gpu"
	sortCores   = "cores"
	sortPercent = "percent"
	sortName    = "name"
)

func topSorts() []string {
	return []string{sortUsed, sortMemory, sortGPU, sortCores, sortPercent, sortName}
}

// topOptions are top's flags.
type topOptions struct {
	view.StateFlags
	output, sortBy string
	whatIf         []string
	failOver       bool
}

// topOutput is `gpuadmit top`'s JSON (docs/cli.md): the namespaces shown,
// by name (as usage's and audit's), and the names of those over a limit,
// in --sort-by order.
type topOutput struct {
	// Namespaces are in --sort-by order (the table's and -o name's).
	Namespaces     []topNamespace          `json:"-"`
	ByName         map[string]topNamespace `json:"namespaces"`
	OverNamespaces []string                `json:"overNamespaces"`
	WhatIf         []whatIfShown           `json:"whatIf,omitempty"`
	Problems       []string                `json:"problems,omitempty"`
	// Teams are the team quotas (GPUClusterQuotas) that count the
	// namespaces shown, by name; OverTeams those over a limit (the team's
	// or a user's).
	Teams     map[string]topTeam `json:"teams,omitempty"`
	OverTeams []string           `json:"overTeams,omitempty"`
	// Budgets are the GPU-hour budgets counting the namespaces shown,
	// each with what each pod and each user burned in its window;
	// OverBudgets name those spent or overrun; BudgetWhatIf the budgets'
	// --what-ifs.
	Budgets      []view.Budget       `json:"budgets,omitempty"`
	OverBudgets  []string            `json:"overBudgets,omitempty"`
	BudgetWhatIf []budgetWhatIfShown `json:"budgetWhatIf,omitempty"`
	teams        []topTeam
	primary      string
}

// topNamespace is one namespace: the first family's usage at the first
// level, every other family's under families, the limits its charge
// passes, and what each of its objects is charged.
type topNamespace struct {
	Name   string `json:"-"`
	Pods   int    `json:"pods"`
	Claims int    `json:"claims,omitempty"`
	topUsage
	Families   map[string]topUsage `json:"families,omitempty"`
	Quotas     []string            `json:"quotas,omitempty"`
	Unresolved []string            `json:"unresolved,omitempty"`
	Over       []OverLimit         `json:"over,omitempty"`
	Charges    []topCharge         `json:"charges"`
}

// topUsage is one family's usage in a namespace: used, reserved (admitted
// pods not recorded yet), the limits (what-ifs applied) and the
// percentage of each limit that used + reserved is (absent without a
// limit, or with a limit of 0). Memory is MiB.
type topUsage struct {
	Used     effective.Vector `json:"used"`
	Reserved effective.Vector `json:"reserved"`
	Limits   usage.Limits     `json:"limits"`
	Percent  usage.Limits     `json:"percent"`
}

// OverLimit is a limit a namespace's used + reserved passes (top, audit).
type OverLimit struct {
	Namespace string `json:"namespace,omitempty"`
	Family    string `json:"family"`
	Resource  string `json:"resource"`
	Used      int64  `json:"used"`
	Reserved  int64  `json:"reserved"`
	Charged   int64  `json:"charged"`
	Limit     int64  `json:"limit"`
	Quota     string `json:"quota,omitempty"`
	Key       string `json:"key,omitempty"`
	// WhatIf: the limit is a --what-if's, not a quota's.
	WhatIf bool `json:"whatIf,omitempty"`
}

// topCharge is what one pod or claim is charged: the first family at the
// first level, the others under families.
type topCharge struct {
	Kind  string          `json:"kind"`
	Name  string          `json:"name"`
	Node  string          `json:"node,omitempty"`
	State effective.State `json:"state,omitempty"`
	Pod   string          `json:"pod,omitempty"`
	// User is who the object is charged to (its requesting-user stamp as
	// the state holds it, else its controller's or its own service account).
	User     string                      `json:"user,omitempty"`
	Used     effective.Vector            `json:"used"`
	Families map[string]effective.Vector `json:"families,omitempty"`
}

// NewCmd is the `gpuadmit top` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var o topOptions
	cmd := &cobra.Command{
		Use:   "top [--state STATE.yaml] [-n NAMESPACE | -A] [--sort-by ORDER] [--what-if NS=RESOURCE=LIMIT ...] [--fail-over] [-o table|wide|json|yaml|jsonpath=TEMPLATE]",
		Short: "Show what each namespace, pod and claim is charged against its GPU limits",
		Long: `Show, like kubectl top, each namespace's GPU usage: used, reserved
(admitted pods not recorded yet, from the namespace's GPUReservationSet when reading
the cluster), its limits and the percentage of each limit they are, per
device family (memory in MiB); then what each of its pods and claims is
charged now (a ResourceClaimTemplate's claim not made yet is charged under
its pod). The namespaces are chosen as usage chooses them.

--what-if NS=RESOURCE=LIMIT replaces namespace NS's limit on RESOURCE (with
or without its limits. prefix; memory in the resource's own unit, times
memoryFactor as a quota's) for this evaluation; it repeats. A namespace
whose used + reserved passes a limit, a what-if's or a quota's, is marked
OVER (its "over" list in JSON); --fail-over exits 1 when any is.`,
		Example: `  # the context's namespace, its pods and claims, largest first
  gpuadmit top

  # every namespace, by the share of their limits they use
  gpuadmit top -A --sort-by percent

  # would team-a fit in 8 GiB of GPU memory? exit 1 if not
  gpuadmit top -n team-a --what-if team-a=nvidia.com/gpumem=8192 --fail-over

  # from a dump
  gpuadmit top --state state.yaml -o json`,
		Annotations: map[string]string{source.ReadsCluster: "true"},
		Args:        cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := output.ParseCmd(cmd, o.output, output.TableFormats)
			if err != nil {
				return err
			}
			if !slices.Contains(topSorts(), o.sortBy) {
				return cmdline.UsageErrorf("--sort-by %q: want one of %s", o.sortBy, strings.Join(topSorts(), ", "))
			}
			bws, rest, err := splitBudgetWhatIfs(o.whatIf)
			if err != nil {
				return err
			}
			ws, err := parseWhatIfs(rest)
			if err != nil {
				return err
			}
			return view.Reading(c, cmd, o.StateFlags, func() error { return run(c, cmd, o, whatIfs{ws, bws}, out) })
		},
	}
	view.StateFlagsOn(cmd, &o.StateFlags,
		"every namespace (default: -n, else the kubeconfig context's namespace; with --state, every namespace of the dump)")
	cmd.Flags().StringVar(&o.sortBy, "sort-by", sortUsed,
		"order of the namespaces and of their pods and claims: used (GPUs, then memory, then cores), memory, gpu, cores, percent (of a limit), largest first; or name")
	_ = cmd.RegisterFlagCompletionFunc("sort-by", cobra.FixedCompletions(topSorts(), cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().StringArrayVar(&o.whatIf, "what-if", nil,
		"NAMESPACE=RESOURCE=LIMIT: evaluate with that limit instead of the namespace's; gcq/QUOTA=RESOURCE=LIMIT: instead of the team quota's (repeat for more)")
	cmd.Flags().BoolVar(&o.failOver, "fail-over", false, "exit 1 when a namespace shown is over a limit (a quota's or a --what-if's)")
	output.Flag(cmd, &o.output, output.FormatTable, output.TableFormats)
	return cmd
}

// whatIfs are top's --what-ifs: of namespaces and team quotas, and of
// budgets.
type whatIfs struct {
	limits  []whatIf
	budgets []budgetWhatIf
}

// run reads the state, applies the what-ifs and prints the report.
func run(c *cmdline.CLI, cmd *cobra.Command, o topOptions, all whatIfs, out output.Output) error {
	v, err := view.ReadView(c, cmd, o.StateFlags, false, true)
	if err != nil {
		return err
	}
	ws := all.limits
	s := v.Snapshot()
	t, err := topReport(s, v.Ledger.Charges, v.Ch.Families, ws, v.Ns, o.sortBy)
	if err != nil {
		return err
	}
	teams, teamShown, err := applyTeamWhatIfs(v.Teams(), ws)
	if err != nil {
		return err
	}
	t.WhatIf = append(t.WhatIf, teamShown...)
	t.Teams, t.teams, t.OverTeams = topTeams(teams, v.Ch.Families)
	if err := t.budgets(&v, all.budgets, c.Clock.Now()); err != nil {
		return err
	}
	v.WarnProblems(s)
	if out.Table() {
		for _, n := range t.Namespaces {
			for _, un := range n.Unresolved {
				v.Warn(fmt.Sprintf("namespace %s: %s", n.Name, un))
			}
		}
	}
	if err := out.Write(c.Stdout, t, func(w io.Writer, wide bool) error { return printTop(w, t, wide) }); err != nil {
		return err
	}
	if o.failOver && (len(t.OverNamespaces) > 0 || len(t.OverTeams) > 0 || len(t.OverBudgets) > 0) {
		return cmdline.ExitCode(1)
	}
	return nil
}

// topReport is top's report on snapshot s (scoped to only when set) with
// the what-ifs applied, charges giving each namespace's objects.
func topReport(s ledger.Snapshot, charges func(string) []ledger.Charge, fams []effective.Family, ws []whatIf,
	only, sortBy string) (topOutput, error) {
	shown, err := applyWhatIfs(s, ws, fams, only)
	if err != nil {
		return topOutput{}, err
	}
	primary := fams[0].Name
	out := topOutput{Namespaces: []topNamespace{}, ByName: map[string]topNamespace{}, OverNamespaces: []string{}, WhatIf: shown, primary: primary}
	for _, name := range source.SortedNamespaces(s) {
		ns := s.Namespaces[name]
		n := topNamespace{Name: name, Pods: ns.Pods, Claims: ns.Claims, topUsage: topUsageOf(ns, primary),
			Unresolved: usage.UnresolvedOf(ns), Charges: []topCharge{}}
		for _, f := range usage.NamespaceFamilies(ns) {
			if f != primary {
				n.Families = withKey(n.Families, f, topUsageOf(ns, f))
			}
		}
		for _, q := range ns.Quotas {
			n.Quotas = append(n.Quotas, q.Name)
		}
		for _, o := range ledger.OverLimits(ns, fams) {
			n.Over = append(n.Over, OverLimit{Family: o.Family, Resource: o.Resource, Used: o.Used, Reserved: o.Reserved,
				Charged: o.Charged(), Limit: o.Limit, Quota: o.Quota, Key: o.Key, WhatIf: isWhatIf(ws, name, o)})
		}
		if len(n.Over) > 0 {
			out.OverNamespaces = append(out.OverNamespaces, name)
		}
		for _, ch := range charges(name) {
			n.Charges = append(n.Charges, topChargeOf(ch, primary))
		}
		sortCharges(n, sortBy, primary)
		out.Namespaces = append(out.Namespaces, n)
		out.ByName[name] = n
	}
	sortNamespaces(out.Namespaces, sortBy, primary)
	sortOver(out.OverNamespaces, out.Namespaces)
	for _, p := range s.Problems {
		out.Problems = append(out.Problems, p.String())
	}
	return out, nil
}

// withKey is m with k set to v (m made when nil).
func withKey[V any](m map[string]V, k string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[k] = v
	return m
}

func topUsageOf(ns ledger.NamespaceSnapshot, f string) topUsage {
	u := topUsage{Used: ns.Used.Of(f), Reserved: ns.Reserved.Of(f), Limits: usage.LimitsOf(ns.Limits[f])}
	ch := u.charged()
	u.Percent = usage.Limits{GPU: percent(ch.GPU, u.Limits.GPU), MemMiB: percent(ch.MemMiB, u.Limits.MemMiB), Cores: percent(ch.Cores, u.Limits.Cores)}
	return u
}

// charged is used + reserved, saturating.
func (u topUsage) charged() effective.Vector {
	return u.Used.AddSat(u.Reserved)
}

func topChargeOf(ch ledger.Charge, primary string) topCharge {
	t := topCharge{Kind: ch.Kind, Name: ch.Name, Node: ch.Node, State: ch.State, Pod: ch.Pod, User: ch.User, Used: ch.Used.Of(primary)}
	for _, f := range ch.Used.Families() {
		if f != primary {
			t.Families = withKey(t.Families, f, ch.Used.Of(f))
		}
	}
	return t
}

// families are the usages of n by family, the primary's included.
func (n topNamespace) families(primary string) map[string]topUsage {
	out := map[string]topUsage{primary: n.topUsage}
	for f, u := range n.Families {
		out[f] = u
	}
	return out
}

// sortNamespaces orders ns as --sort-by says, by name among equals.
func sortNamespaces(ns []topNamespace, by, primary string) {
	key := func(n topNamespace) []int64 {
		charged, limits := map[string]effective.Vector{}, map[string]usage.Limits{}
		for f, u := range n.families(primary) {
			charged[f], limits[f] = u.charged(), u.Limits
		}
		return sortKey(by, charged, limits)
	}
	slices.SortStableFunc(ns, func(a, b topNamespace) int {
		return cmp.Or(slices.Compare(key(b), key(a)), cmp.Compare(a.Name, b.Name))
	})
}

// sortCharges orders n's charges as --sort-by says (percent: of n's
// limits), by kind and name among equals.
func sortCharges(n topNamespace, by, primary string) {
	limits := map[string]usage.Limits{}
	for f, u := range n.families(primary) {
		limits[f] = u.Limits
	}
	key := func(c topCharge) []int64 {
		return sortKey(by, withKey(maps.Clone(c.Families), primary, c.Used), limits)
	}
	slices.SortStableFunc(n.Charges, func(a, b topCharge) int {
		return cmp.Or(slices.Compare(key(b), key(a)), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
}

// sortKey is what --sort-by compares, largest first: charged per family
// summed over families, or the largest share of a limit (limits by family).
func sortKey(by string, charged map[string]effective.Vector, limits map[string]usage.Limits) []int64 {
	var total effective.Vector
	load := int64(-1)
	for f, c := range charged {
		total = total.AddSat(c)
		l := limits[f]
		load = max(load, loadOf(c.GPU, l.GPU), loadOf(c.MemMiB, l.MemMiB), loadOf(c.Cores, l.Cores))
	}
	switch by {
	case sortGPU:
		return []int64{total.GPU}
	case sortMemory:
		return []int64{total.MemMiB}
	case sortCores:
		return []int64{total.Cores}
	case sortPercent:
		return []int64{load}
	case sortUsed:
		return []int64{total.GPU, total.MemMiB, total.Cores}
	}
	return nil
}

// sortOver puts the names of the namespaces over a limit in the order of
// shown (--sort-by's).
func sortOver(over []string, shown []topNamespace) {
	slices.SortStableFunc(over, func(a, b string) int {
		return slices.IndexFunc(shown, func(n topNamespace) bool { return n.Name == a }) -
			slices.IndexFunc(shown, func(n topNamespace) bool { return n.Name == b })
	})
}

// Rows are the namespaces shown, in --sort-by order (-o name,
// custom-columns).
func (t topOutput) Rows() []output.Row {
	rows := make([]output.Row, len(t.Namespaces))
	for i, n := range t.Namespaces {
		rows[i] = output.Row{Kind: "namespace", Name: n.Name, Object: n}
	}
	return rows
}
