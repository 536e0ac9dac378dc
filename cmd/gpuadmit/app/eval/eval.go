package eval

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	effectivecmd "github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/effective"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// evalOutput is the command-line contract's JSON for `gpuadmit eval` of
// one Pod (docs/design.md): the first family's (nvidia's) effective demand
// at the first level, as before families, every other family's the pod
// asks for under families, by name.
type evalOutput struct {
	Allowed   bool             `json:"allowed"`
	Effective effective.Vector `json:"effective"`
	Denials   []string         `json:"denials"`
	Warnings  []string         `json:"warnings"`
	// Families are the other families' demands.
	Families map[string]evalFamily `json:"families,omitempty"`
	// Explanation is given with --explain: the rule behind each message and
	// the namespace's limits against its usage after the pod.
	Explanation *decision.Explanation `json:"explanation,omitempty"`
}

// evalFamily is one family's part of eval's output.
type evalFamily struct {
	Effective effective.Vector `json:"effective"`
}

// evalEffective splits a decision's demand into the first level's (family
// primary) and the other families'.
func evalEffective(u effective.Usage, primary string) (effective.Vector, map[string]evalFamily) {
	var fams map[string]evalFamily
	for _, f := range u.Families() {
		if f == primary || u.Of(f).IsZero() {
			continue
		}
		if fams == nil {
			fams = map[string]evalFamily{}
		}
		fams[f] = evalFamily{Effective: u.Of(f)}
	}
	return u.Of(primary), fams
}

// Objects is the output for a manifest that is not exactly one Pod:
// every object, and how many of its pods would be admitted one after the
// other.
type Objects struct {
	// Allowed: every pod of every object would be admitted.
	Allowed bool         `json:"allowed"`
	Objects []evalObject `json:"objects"`
	// primary is the family at the first level of each object's demand.
	primary string
	// decidedBy says which source decided: locally, or the webhook by a
	// server dry run (and why).
	decidedBy string
	// Failed are the files and objects that could not be decided: each
	// is said on stderr after the others are printed (exit code 2).
	Failed []error `json:"-"`
}

type evalObject struct {
	effectivecmd.ObjectRef
	// Admitted is how many of the Replicas pods would be admitted now, one
	// after the other (each counted before the next is decided).
	Admitted int64 `json:"admitted"`
	evalOutput
	// evaluatedIn is the namespace the pods were decided in.
	evaluatedIn string
}

// Timeout bounds reading the state, loading the policies and deciding.
const Timeout = time.Minute

// evalLong is eval's help.
const evalLong = `Make the webhook's decision for a CREATE of each pod of the manifests in a
cluster holding the state of a 'kubectl get -o yaml' dump (--state), or of
the cluster when --state is not given (its Pods, Nodes, ResourceQuotas,
ResourceClaims, ResourceClaimTemplates, ResourceSlices and the reservations
of its GPUReservationSets): allowed, effective demand, denials, warnings.
-f repeats and takes directories (-R: with their subdirectories), as in
kubectl. The pods of all the manifests, and of a workload, are decided
one after the other, each admitted one counted before the next. Exits 1
when a pod or claim is denied. The effective demand is the nvidia
family's; that of every other device family the pod asks for is under
"families" (a FAMILY column in the table).

A workload (a Deployment, ReplicaSet, StatefulSet, Job or CronJob, or an
object of a kind the configuration's workloads.kinds lists: JobSet,
LeaderWorkerSet, RayCluster, Kubeflow's jobs...) is first checked as a
whole, as the webhook checks it when it is applied: its pods x their
demand past a hard limit of the namespace is a denial, pods that will
wait for room a warning. Its pods are then decided as the identity its
controller creates them as (the kind's podCreator: kube-controller-
manager's replicaset-controller, statefulset-controller or job-controller
for the built-in kinds), so that policies reading input.userInfo decide
as in the cluster; --as-requester decides them as the requesting user. A
custom kind's pod templates are a row each.

Each ResourceClaim (resource.k8s.io/v1) of the manifests is decided as the
webhook decides its CREATE: the devices of the DeviceClasses the
configuration governs it asks for, against the same limits (a claim of
no governed class is admitted undecided, and a warning says so). The
claims of a pod's resourceClaimTemplateName templates, those of the state
and of the manifests, are part of its demand.

Reading the cluster, eval decides as the webhook installed there does:
with its configuration (the ConfigMap gpuadmit-config in
--gpuadmit-namespace) and its policy ConfigMaps (those the configuration's
policy.configMapSelector selects there), loaded as the webhook loads them;
--config and --policy replace them. A line on stderr says which
configuration and policies were used (with --state, only when --config or
--policy is given).

Live, eval decides locally only when it may read everything the webhook
reads. When a read is refused (a namespace user may not list nodes or
every namespace's pods, nor read gpuadmit's ConfigMaps), or the
configuration names a file of the webhook's pod (devices.hamiConfigPath,
policy.directory), the webhook decides: each object is created with dryRun=All (a workload's pod from its
template, under a generated name), which stores, reserves and records
nothing; this needs create on pods in the namespace. A last line on stderr
says which decided ("decided locally", or "decided by the webhook (server
dry run)" and the reads refused). Without that right either, eval fails
naming them.

-n sets the namespace of the request of an object whose manifest names
none (default: the context's namespace, or "default" with --state); an
object whose manifest names another is refused, as kubectl refuses it,
and the others decided (exit 2 at the end). The policies see the
namespace's labels (a Namespace object in --state, or the cluster's) and
the requesting user: --as and --as-group as kubectl takes them (the API
server adds system:authenticated), else the kubeconfig's user when reading
the cluster, or nobody with --state. eval takes no -A: it decides in the
pods' namespaces.

It prints a table (a row per object, then the denials and warnings); -o
wide adds how many of each, -o json the JSON of the command-line contract,
-o yaml that JSON as YAML, -o jsonpath=TEMPLATE what the template picks of
it. The exit code is the same in every format.`

// NewCmd is the `gpuadmit eval` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var o evalOptions
	cmd := &cobra.Command{
		Use:   "eval -f POD.yaml [--state STATE.yaml] [-n NAMESPACE] [-o table|wide|json|yaml|jsonpath=TEMPLATE]",
		Short: "Make the webhook's decision for a CREATE of a pod, workload or ResourceClaim",
		Long:  evalLong,
		Example: `  # would the webhook admit this pod in the cluster of the current context?
  gpuadmit eval -f pod.yaml

  # two manifests and a directory with its subdirectories, decided one after the other
  gpuadmit eval -f quota-filler.yaml -f pod.yaml -f jobs/ -R

  # and in namespace team-b, from a dump, as JSON
  gpuadmit eval -f pod.yaml --state state.yaml -n team-b -o json

  # as a member of ml-leads, with the rule behind each message
  gpuadmit eval -f pod.yaml --state state.yaml --as alice --as-group ml-leads --explain

  # only the verdict
  gpuadmit eval -f pod.yaml -o jsonpath='{.allowed}'`,
		Annotations: map[string]string{source.ReadsCluster: "true"},
		Args:        cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out, err := o.Check(cmd)
			if err != nil {
				return err
			}
			err = run(c, cmd, o, out)
			if o.state == "" {
				err = source.Unreachable(c, err)
			}
			return err
		},
	}
	cmdline.FilenameFlag(cmd, &o.in, "pod, workload or ResourceClaim manifests")
	cmd.Flags().StringVar(&o.state, "state", "", source.StateUsage)
	setup.FlagsOn(cmd, &o.setup, true)
	output.Flag(cmd, &o.output, output.FormatTable, output.TableFormats)
	cmd.Flags().BoolVar(&o.podsAsRequester, "as-requester", false, "decide a workload's pods as the requesting user (--as, or you) instead of the identity its controller creates them as (the configuration's workloads podCreator)")
	cmd.Flags().BoolVar(&o.explain, "explain", false, "tell, for each denial and warning, the rule that produced it (file:line), and the namespace's limits against its usage after the pod")
	return cmd
}

// evalOptions are eval's flags.
type evalOptions struct {
	in              cmdline.ManifestFlags
	setup           setup.Flags
	state, output   string
	explain         bool
	podsAsRequester bool
}

// Check reports a usage error in eval's flags, and reads -o.
func (o evalOptions) Check(cmd *cobra.Command) (output.Output, error) {
	if err := o.in.Required(cmd); err != nil {
		return output.Output{}, err
	}
	if o.in.Stdin() && o.state == "-" {
		return output.Output{}, cmdline.UsageErrorf("-f and --state cannot both read standard input")
	}
	out, err := output.ParseCmd(cmd, o.output, output.TableFormats)
	if err != nil {
		return output.Output{}, err
	}
	return out, setup.CheckFlags(cmd, o.state)
}

// run decides each object of the manifests and prints the decisions.
func run(c *cmdline.CLI, cmd *cobra.Command, o evalOptions, format output.Output) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), Timeout)
	defer cancel()
	warn := func(w string) { fmt.Fprintf(c.Stderr, "%s: warning: %s\n", cmd.CommandPath(), w) }
	src := source.Of(c, o.state, warn)
	source.SetGpuadmitNamespace(src, o.setup.Namespace())
	kube, err := src.Gpuadmit()
	if err != nil {
		return err
	}
	st, err := setup.New(ctx, o.setup, kube, true, c.Stderr)
	if err != nil {
		return err
	}
	st.Say(cmd, o.setup, kube != nil, true, c.Stderr)
	e := Evaluation{Namespace: *c.Kube.Namespace, Strict: true, Source: src, Warn: warn, explain: o.explain, Setup: st, PodsAsRequester: o.podsAsRequester, Clock: c.Clock}
	out, single, err := e.Run(ctx, o.in, c.Stdin)
	if err != nil {
		return err
	}
	if o.state == "" {
		fmt.Fprintf(c.Stderr, "%s: %s\n", cmd.CommandPath(), out.decidedBy)
	}
	var doc any = out
	if single && !format.Listed() {
		doc = out.Objects[0].evalOutput
	}
	if err := format.Write(c.Stdout, doc, func(w io.Writer, wide bool) error { return printEval(w, out, wide) }); err != nil {
		return err
	}
	if len(out.Failed) > 0 {
		return cmdline.Failed(cmd, c.Stderr, out.Failed)
	}
	if !out.Allowed {
		return cmdline.ExitCode(1)
	}
	return nil
}

// Rows are the objects decided (-o name, custom-columns).
func (o Objects) Rows() []output.Row {
	rows := make([]output.Row, len(o.Objects))
	for i, obj := range o.Objects {
		rows[i] = output.Row{Kind: obj.Kind, Name: obj.Name, Object: obj}
	}
	return rows
}
