package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// usageOutput is the command-line contract's JSON for `gpuadmit usage` (docs/design.md)
// ("pods", "quotas", "unresolved" and "problems" are additions).
type usageOutput struct {
	Namespaces map[string]usageNamespace `json:"namespaces"`
	Nodes      map[string]usageNode      `json:"nodes"`
	Problems   []string                  `json:"problems,omitempty"`
}

type usageNamespace struct {
	Used   effective.Vector `json:"used"`
	Limits usageLimits      `json:"limits"`
	Pods   int              `json:"pods"`
	// Quotas are the limits of each ResourceQuota (Limits is the tightest).
	Quotas     map[string]usageLimits `json:"quotas,omitempty"`
	Unresolved []string               `json:"unresolved,omitempty"`
}

// usageLimits: a limit that is not set is absent; memory is MiB.
type usageLimits struct {
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

func (c *cli) usageCmd() *cobra.Command {
	var o struct {
		state, output string
		setup         setupFlags
	}
	cmd := &cobra.Command{
		Use:   "usage [--state STATE.yaml] [-n NAMESPACE] [-o json|table]",
		Short: "Show GPU usage per namespace (with quota limits) and per device",
		Long: `Show GPU usage per namespace, with the limits of its ResourceQuotas, and
per device of each GPU node, from the Pods, Nodes and ResourceQuotas of a
'kubectl get -o yaml' dump (--state), or of the cluster when --state is not
given. -n shows one namespace only.

Reading the cluster, it reads the webhook's configuration too (the ConfigMap
gpuadmit-config of --gpuadmit-namespace: resource names, memoryFactor),
unless --config names one, and says on stderr which it used.`,
		Example: `  # every namespace of the cluster of the current context, as a table
  gpuadmit usage -o table

  # one namespace, from a dump
  kubectl get pods,nodes,resourcequotas -A -o yaml > state.yaml
  gpuadmit usage --state state.yaml -n team-a`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(o.output); err != nil {
				return err
			}
			if err := checkSetupFlags(cmd, o.state); err != nil {
				return err
			}
			return c.usage(cmd, o.state, o.setup, o.output)
		},
	}
	cmd.Flags().StringVar(&o.state, "state", "", "dump of the cluster's Pods, Nodes and ResourceQuotas, as 'kubectl get -o yaml' prints them (- for standard input); default: read the cluster")
	setupFlagsOn(cmd, &o.setup, false)
	outputFlag(cmd, &o.output)
	return cmd
}

func (c *cli) usage(cmd *cobra.Command, state string, f setupFlags, output string) error {
	warn := func(w string) { fmt.Fprintf(c.stderr, "%s: warning: %s\n", cmd.CommandPath(), w) }
	src := c.source(state, warn)
	kube, err := src.gpuadmit()
	if err != nil {
		return err
	}
	st, err := newSetup(cmd.Context(), f, kube, false, c.stderr)
	if err != nil {
		return err
	}
	st.say(cmd, f, kube != nil, false, c.stderr)
	ns := *c.kube.Namespace
	var scope []string
	if ns != "" {
		scope = []string{ns}
	}
	l, _, err := src.ledger(cmd.Context(), config.Settings(st.cfg), scope, false)
	if err != nil {
		return err
	}
	out := usageReport(l.Snapshot(nil), ns)
	for _, p := range out.Problems {
		warn(p)
	}
	if output == "table" {
		for _, name := range slices.Sorted(maps.Keys(out.Namespaces)) {
			for _, u := range out.Namespaces[name].Unresolved {
				warn(fmt.Sprintf("namespace %s: %s", name, u))
			}
		}
		return printUsage(c.stdout, out)
	}
	return writeJSON(c.stdout, out)
}

// usageReport renders a ledger snapshot in the command-line contract's
// shape; when only is set, its namespaces are that one alone (with no usage
// and no limits if the snapshot lacks it) and its problems those of that
// namespace and of nodes.
func usageReport(s ledger.Snapshot, only string) usageOutput {
	out := usageOutput{Namespaces: map[string]usageNamespace{}, Nodes: map[string]usageNode{}}
	if only != "" {
		ns := s.Namespaces[only]
		s.Namespaces = map[string]ledger.NamespaceSnapshot{only: ns}
		s.Problems = slices.DeleteFunc(s.Problems, func(p ledger.Problem) bool { return p.Namespace != "" && p.Namespace != only })
	}
	for name, ns := range s.Namespaces {
		u := usageNamespace{Used: ns.Used, Limits: limitsOf(ns.Limits), Pods: ns.Pods}
		for _, q := range ns.Quotas {
			if u.Quotas == nil {
				u.Quotas = map[string]usageLimits{}
			}
			u.Quotas[q.Name] = limitsOf(q.Limits)
		}
		for _, p := range ns.Unresolved {
			u.Unresolved = append(u.Unresolved, fmt.Sprintf(
				"pod %s: containers %q: memory is a percentage of a device of unknown size; not counted in used.gpumem", p.Pod, p.Containers))
		}
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

func limitsOf(l ledger.Limits) usageLimits {
	v := func(p *ledger.Limit) *int64 {
		if p == nil {
			return nil
		}
		n := p.Value
		return &n
	}
	return usageLimits{GPU: v(l.GPU), MemMiB: v(l.MemMiB), Cores: v(l.Cores)}
}
