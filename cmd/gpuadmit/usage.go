package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/cache"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
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

func runUsage(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuadmit usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "cluster state: Pods, Nodes and ResourceQuotas as `kubectl get -o yaml` prints them (- for standard input)")
	cfgPath := fs.String("config", "", "configuration file, the webhook's (or a HAMi device config); default: every default")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *state == "" || fs.NArg() > 0 {
		return fail(stderr, "usage", errors.New("usage: gpuadmit usage --state STATE.yaml [--config CFG]"))
	}
	cfg, err := loadConfig(*cfgPath, stderr)
	if err != nil {
		return fail(stderr, "usage", err)
	}
	l, err := loadState(*state, stdin, cfg.Devices, logr.Discard())
	if err != nil {
		return fail(stderr, "usage", err)
	}
	out := usageReport(l.Snapshot())
	for _, p := range out.Problems {
		fmt.Fprintf(stderr, "gpuadmit usage: warning: %s\n", p)
	}
	if err := writeJSON(stdout, out); err != nil {
		return fail(stderr, "usage", err)
	}
	return 0
}

// usageReport renders a ledger snapshot in the command-line contract's shape.
func usageReport(s cache.Snapshot) usageOutput {
	out := usageOutput{Namespaces: map[string]usageNamespace{}, Nodes: map[string]usageNode{}}
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

func limitsOf(l cache.Limits) usageLimits {
	v := func(p *cache.Limit) *int64 {
		if p == nil {
			return nil
		}
		n := p.Value
		return &n
	}
	return usageLimits{GPU: v(l.GPU), MemMiB: v(l.MemMiB), Cores: v(l.Cores)}
}
