package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// evalOutput is the command-line contract's JSON for `gpuadmit eval` of
// one Pod (docs/design.md).
type evalOutput struct {
	Allowed   bool             `json:"allowed"`
	Effective effective.Vector `json:"effective"`
	Denials   []string         `json:"denials"`
	Warnings  []string         `json:"warnings"`
	// Explanation is given with --explain: the rule behind each message and
	// the namespace's limits against its usage after the pod.
	Explanation *decision.Explanation `json:"explanation,omitempty"`
}

// evalObjects is the output for a manifest that is not exactly one Pod:
// every object, and how many of its pods would be admitted one after the
// other.
type evalObjects struct {
	// Allowed: every pod of every object would be admitted.
	Allowed bool         `json:"allowed"`
	Objects []evalObject `json:"objects"`
}

type evalObject struct {
	objectRef
	// Admitted is how many of the Replicas pods would be admitted now, one
	// after the other (each counted before the next is decided).
	Admitted int64 `json:"admitted"`
	evalOutput
	// evaluatedIn is the namespace the pods were decided in.
	evaluatedIn string
}

// evalTimeout bounds reading the state, loading the policies and deciding.
const evalTimeout = time.Minute

func (c *cli) evalCmd() *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval -f POD.yaml [--state STATE.yaml] [-n NAMESPACE] [-o json|table]",
		Short: "Make the webhook's decision for a CREATE of a pod or workload",
		Long: `Make the webhook's decision for a CREATE of each pod of the manifest in a
cluster holding the state of a 'kubectl get -o yaml' dump (--state), or of
the cluster when --state is not given (its Pods, Nodes, ResourceQuotas and
the reservations of its GPUUsage objects): allowed, effective demand,
denials, warnings. A workload's pods are decided one after the other, each
admitted one counted before the next. Exits 1 when a pod is denied.

-n sets the namespace of the request (default: the pod's, else the
context's namespace, or "default" with --state). The policies see the
namespace's labels (a Namespace object in --state, or the cluster's) and
the requesting user: --as and --as-group as kubectl takes them (the API
server adds system:authenticated), else the kubeconfig's user when reading
the cluster, or nobody with --state.`,
		Example: `  # would the webhook admit this pod in the cluster of the current context?
  gpuadmit eval -f pod.yaml

  # and in namespace team-b, from a dump
  gpuadmit eval -f pod.yaml --state state.yaml -n team-b -o table

  # as a member of ml-leads, with the rule behind each message
  gpuadmit eval -f pod.yaml --state state.yaml --as alice --as-group ml-leads --explain -o table`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.file == "" {
				return usageErrorf("-f is required; usage: %s", cmd.UseLine())
			}
			if o.file == "-" && o.state == "-" {
				return usageErrorf("-f and --state cannot both read standard input")
			}
			if err := checkOutput(o.output); err != nil {
				return err
			}
			return c.eval(cmd, o)
		},
	}
	filenameFlag(cmd, &o.file, "pod or workload manifest (YAML or JSON; - for standard input)")
	cmd.Flags().StringVar(&o.state, "state", "", "dump of the cluster's Pods, Nodes and ResourceQuotas, as 'kubectl get -o yaml' prints them (- for standard input); default: read the cluster")
	configFlag(cmd, &o.config)
	cmd.Flags().StringVar(&o.policy, "policy", "", "directory of Rego modules added to (or, by file name, replacing) the embedded policies")
	_ = cmd.MarkFlagDirname("policy")
	outputFlag(cmd, &o.output)
	cmd.Flags().BoolVar(&o.explain, "explain", false, "tell, for each denial and warning, the rule that produced it (file:line), and the namespace's limits against its usage after the pod")
	return cmd
}

// evalOptions are eval's flags.
type evalOptions struct {
	file, state, config, policy, output string
	explain                             bool
}

func (c *cli) eval(cmd *cobra.Command, o evalOptions) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), evalTimeout)
	defer cancel()
	warn := func(w string) { fmt.Fprintf(c.stderr, "%s: warning: %s\n", cmd.CommandPath(), w) }
	e := evaluation{namespace: *c.kube.Namespace, source: c.source(o.state, warn), warn: warn, explain: o.explain}
	out, single, err := e.run(ctx, o.file, o.config, o.policy, c.stdin, c.stderr)
	if err != nil {
		return err
	}
	var doc any = out
	if single {
		doc = out.Objects[0].evalOutput
	}
	if o.output == "table" {
		err = printEval(c.stdout, out)
	} else {
		err = writeJSON(c.stdout, doc)
	}
	if err != nil {
		return err
	}
	if !out.Allowed {
		return exitCode(1)
	}
	return nil
}
