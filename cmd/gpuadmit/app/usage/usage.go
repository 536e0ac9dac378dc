package usage

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/view"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// usageOutput is the command-line contract's JSON for `gpuadmit usage` (docs/design.md)
// ("pods", "claims", "quotas", "unresolved" and "problems" are additions).
type usageOutput struct {
	Namespaces map[string]usageNamespace `json:"namespaces"`
	Nodes      map[string]usageNode      `json:"nodes"`
	Problems   []string                  `json:"problems,omitempty"`
	// Teams are the team quotas (GPUClusterQuotas) counting the
	// namespaces shown, by name (absent without any).
	Teams map[string]usageTeam `json:"teams,omitempty"`
	// Budgets are the GPU-hour budgets (GPUBudgets, GPUClusterBudgets)
	// counting the namespaces shown, sorted (absent without any).
	Budgets []view.Budget `json:"budgets,omitempty"`
	// primary is the family at the first level of each namespace.
	primary string
}

// usageNamespace is one namespace: the first family's (nvidia's) usage and
// limits at the first level, as before families, and every other family
// the namespace uses, reserves or limits under families, by name.
type usageNamespace struct {
	Used   effective.Vector `json:"used"`
	Limits Limits           `json:"limits"`
	Pods   int              `json:"pods"`
	// Claims is the number of ResourceClaims of governed DeviceClasses
	// charged to the namespace (their demand is in Used).
	Claims int `json:"claims,omitempty"`
	// Quotas are the limits of each ResourceQuota (Limits is the tightest);
	// a quota that limits other families only is under theirs alone.
	Quotas     map[string]Limits      `json:"quotas,omitempty"`
	Unresolved []string               `json:"unresolved,omitempty"`
	Families   map[string]usageFamily `json:"families,omitempty"`
}

// usageFamily is one family's usage in a namespace: used, reserved (by
// admitted pods the watch has not recorded yet), the tightest limits and
// the limits of each ResourceQuota that limits the family.
type usageFamily struct {
	Used     effective.Vector  `json:"used"`
	Reserved effective.Vector  `json:"reserved"`
	Limits   Limits            `json:"limits"`
	Quotas   map[string]Limits `json:"quotas,omitempty"`
}

// Limits are a namespace's limits: a limit that is not set is absent; memory is MiB.
type Limits struct {
	GPU    *int64 `json:"gpu,omitempty"`
	MemMiB *int64 `json:"gpumem,omitempty"`
	Cores  *int64 `json:"gpucores,omitempty"`
}

type usageNode struct {
	Devices map[string]usageDevice `json:"devices"`
}

type usageDevice struct {
	Capacity *usageCapacity   `json:"capacity,omitempty"`
	Used     effective.Vector `json:"used"`
}

type usageCapacity struct {
	MemMiB int64 `json:"gpumem"`
	Cores  int64 `json:"gpucores"`
}

// usageOptions are usage's flags.
type usageOptions struct {
	view.StateFlags
	output string
}

// NewCmd is the `gpuadmit usage` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var o usageOptions
	cmd := &cobra.Command{
		Use:   "usage [--state STATE.yaml] [-n NAMESPACE | -A] [-o table|wide|json|yaml|jsonpath=TEMPLATE]",
		Short: "Show GPU usage per namespace (with quota limits) and per device",
		Long: `Show GPU usage per namespace, with the limits of its ResourceQuotas, and
per device of each GPU node, from the Pods, Nodes and ResourceQuotas, and
the ResourceClaims, ResourceClaimTemplates and ResourceSlices
(resource.k8s.io/v1), of a 'kubectl get -o yaml' dump (--state), or of the
cluster when --state is not given. The ResourceClaims of the DeviceClasses
the configuration governs are charged like the pods' extended resources
(a CLAIMS column in the table beside PODS when a namespace has any). The
nvidia family is at the first level of each namespace; every other device
family a namespace uses or limits is under "families" (a FAMILY column in
the table).

As kubectl get: reading the cluster, usage shows the namespace of -n, else
that of the kubeconfig context ("default" when it names none); -A
(--all-namespaces) shows every namespace. With --state, every namespace of
the dump unless -n. The devices of every node are shown either way. -o
wide adds the quotas, unresolved pods and free device memory and cores.

Reading the cluster, it reads the webhook's configuration too (the ConfigMap
gpuadmit-config of --gpuadmit-namespace: resource names, memoryFactor),
unless --config names one, and says on stderr which it used.`,
		Example: `  # every namespace of the cluster of the current context
  gpuadmit usage -A

  # the context's namespace, as YAML
  gpuadmit usage -o yaml

  # one namespace, from a dump
  kubectl get pods,nodes,resourcequotas,resourceclaims,resourceclaimtemplates,resourceslices -A -o yaml > state.yaml
  gpuadmit usage --state state.yaml -n team-a

  # the GPU memory team-a uses, for a script
  gpuadmit usage -n team-a -o jsonpath='{.namespaces.team-a.used.gpumem}'`,
		Annotations: map[string]string{source.ReadsCluster: "true"},
		Args:        cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := output.ParseCmd(cmd, o.output, output.TableFormats)
			if err != nil {
				return err
			}
			return view.Reading(c, cmd, o.StateFlags, func() error { return run(c, cmd, o, out) })
		},
	}
	view.StateFlagsOn(cmd, &o.StateFlags,
		"every namespace (default: -n, else the kubeconfig context's namespace; with --state, every namespace of the dump)")
	output.Flag(cmd, &o.output, output.FormatTable, output.TableFormats)
	return cmd
}

// run reads the state and prints the usage report, as -o says.
func run(c *cmdline.CLI, cmd *cobra.Command, o usageOptions, out output.Output) error {
	v, err := view.ReadView(c, cmd, o.StateFlags, false, false)
	if err != nil {
		return err
	}
	u := usageReport(v.Ledger.Snapshot(nil), v.Ns, v.Primary())
	u.Teams = teamsOf(v.Teams(), v.Primary())
	u.Budgets = v.Budgets(c.Clock.Now())
	for _, p := range u.Problems {
		v.Warn(p)
	}
	if out.Table() {
		for _, name := range slices.Sorted(maps.Keys(u.Namespaces)) {
			for _, un := range u.Namespaces[name].Unresolved {
				v.Warn(fmt.Sprintf("namespace %s: %s", name, un))
			}
		}
	}
	return out.Write(c.Stdout, u, func(w io.Writer, wide bool) error { return printUsage(w, u, wide) })
}

// usageReport renders a ledger snapshot in the command-line contract's
// shape, family primary at the first level of each namespace; when only is set, its namespaces are that one alone (with no usage
// and no limits if the snapshot lacks it) and its problems those of that
// namespace and of nodes.
func usageReport(s ledger.Snapshot, only, primary string) usageOutput {
	out := usageOutput{Namespaces: map[string]usageNamespace{}, Nodes: map[string]usageNode{}, primary: primary}
	s = view.Scoped(s, only)
	for name, ns := range s.Namespaces {
		u := usageNamespace{Used: ns.Used.Of(primary), Limits: LimitsOf(ns.Limits[primary]), Pods: ns.Pods, Claims: ns.Claims}
		for _, q := range ns.Quotas {
			if _, limited := q.Limits[primary]; limited || len(q.Limits) == 0 {
				if u.Quotas == nil {
					u.Quotas = map[string]Limits{}
				}
				u.Quotas[q.Name] = LimitsOf(q.Limits[primary])
			}
		}
		u.Families = familiesOf(ns, primary)
		u.Unresolved = UnresolvedOf(ns)
		out.Namespaces[name] = u
	}
	for name, n := range s.Nodes {
		un := usageNode{Devices: make(map[string]usageDevice, len(n.Devices))}
		for id, d := range n.Devices {
			ud := usageDevice{Used: d.Used}
			if d.Capacity != nil {
				ud.Capacity = &usageCapacity{MemMiB: d.Capacity.MemMiB, Cores: d.Capacity.Cores}
			}
			un.Devices[id] = ud
		}
		out.Nodes[name] = un
	}
	for _, p := range s.Problems {
		out.Problems = append(out.Problems, p.String())
	}
	return out
}

// UnresolvedOf says, for each pod of ns whose memory is unresolved, which
// containers and that their memory is not counted (nil when none).
func UnresolvedOf(ns ledger.NamespaceSnapshot) []string {
	var out []string
	for _, p := range ns.Unresolved {
		out = append(out, fmt.Sprintf(
			"pod %s: containers %q: memory is a percentage of a device of unknown size; not counted in used.gpumem", p.Pod, p.Containers))
	}
	return out
}

// familiesOf is the usage of every family but primary that ns uses,
// reserves or limits (nil when none).
func familiesOf(ns ledger.NamespaceSnapshot, primary string) map[string]usageFamily {
	var out map[string]usageFamily
	for _, f := range NamespaceFamilies(ns) {
		if f == primary {
			continue
		}
		uf := usageFamily{Used: ns.Used.Of(f), Reserved: ns.Reserved.Of(f), Limits: LimitsOf(ns.Limits[f])}
		for _, q := range ns.Quotas {
			if l, ok := q.Limits[f]; ok {
				if uf.Quotas == nil {
					uf.Quotas = map[string]Limits{}
				}
				uf.Quotas[q.Name] = LimitsOf(l)
			}
		}
		if out == nil {
			out = map[string]usageFamily{}
		}
		out[f] = uf
	}
	return out
}

// NamespaceFamilies are the families ns uses, reserves or limits, sorted.
func NamespaceFamilies(ns ledger.NamespaceSnapshot) []string {
	set := map[string]bool{}
	for _, u := range []effective.Usage{ns.Used, ns.Reserved, ns.Unconfirmed} {
		for f, v := range u {
			if !v.IsZero() {
				set[f] = true
			}
		}
	}
	for f := range ns.Limits {
		set[f] = true
	}
	for _, q := range ns.Quotas {
		for f := range q.Limits {
			set[f] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// LimitsOf is l as the JSON reports it: the limits that are set.
func LimitsOf(l ledger.Limits) Limits {
	v := func(p *ledger.Limit) *int64 {
		if p == nil {
			return nil
		}
		n := p.Value
		return &n
	}
	return Limits{GPU: v(l.GPU), MemMiB: v(l.MemMiB), Cores: v(l.Cores)}
}

// Rows are the namespaces, by name (-o name, custom-columns).
func (u usageOutput) Rows() []output.Row {
	var rows []output.Row
	for _, name := range slices.Sorted(maps.Keys(u.Namespaces)) {
		rows = append(rows, output.Row{Kind: "namespace", Name: name, Object: u.Namespaces[name]})
	}
	return rows
}
