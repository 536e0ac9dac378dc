package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	webhookmanifests "github.com/gpuadmit/gpuadmit/manifests/webhook"

	"github.com/gpuadmit/gpuadmit/pkg/cache"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
	"github.com/gpuadmit/gpuadmit/policy"
)

// evalOutput is the command-line contract's JSON for `gpuadmit eval` of
// one Pod (docs/design.md).
type evalOutput struct {
	Allowed   bool             `json:"allowed"`
	Effective effective.Vector `json:"effective"`
	Denials   []string         `json:"denials"`
	Warnings  []string         `json:"warnings"`
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
}

const evalUsage = "usage: gpuadmit eval -f POD.yaml --state STATE.yaml [--config CFG] [--policy DIR] [--namespace NS]"

// evalTimeout bounds loading the policies and deciding.
const evalTimeout = time.Minute

func runEval(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuadmit eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "pod or workload manifest (YAML or JSON; - for standard input)")
	state := fs.String("state", "", "cluster state: Pods, Nodes and ResourceQuotas as `kubectl get -o yaml` prints them (- for standard input)")
	cfgPath := fs.String("config", "", "configuration file, the webhook's (or a HAMi device config); default: every default")
	policyDir := fs.String("policy", "", "directory of Rego modules added to (or, by file name, replacing) the embedded policies")
	namespace := fs.String("namespace", "", "namespace of the request (default: the pod's, else \"default\")")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || *state == "" || fs.NArg() > 0 {
		return fail(stderr, "eval", errors.New(evalUsage))
	}
	if *file == "-" && *state == "-" {
		return fail(stderr, "eval", errors.New("-f and --state cannot both read standard input"))
	}
	e := evaluation{namespace: *namespace}
	out, single, err := e.run(*file, *state, *cfgPath, *policyDir, stdin, stderr)
	if err != nil {
		return fail(stderr, "eval", err)
	}
	var doc any = out
	if single {
		doc = out.Objects[0].evalOutput
	}
	if err := writeJSON(stdout, doc); err != nil {
		return fail(stderr, "eval", err)
	}
	if !out.Allowed {
		return 1
	}
	return 0
}

// evaluation makes the webhook's decisions for the pods of a manifest in a
// cluster holding a state.
type evaluation struct {
	namespace string
	ledger    *cache.Ledger
	decider   *decision.Decider
	matcher   *matchcond.Matcher
}

// run evaluates every object of file against state; single reports that
// the manifest is exactly one Pod.
func (e *evaluation) run(file, state, cfgPath, policyDir string, stdin io.Reader, stderr io.Writer) (evalObjects, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	cfg, err := loadConfig(cfgPath, stderr)
	if err != nil {
		return evalObjects{}, false, err
	}
	objs, err := manifest.ReadFile(file, stdin)
	if err != nil {
		return evalObjects{}, false, err
	}
	if len(objs.Workloads) == 0 {
		return evalObjects{}, false, fmt.Errorf("%s: no Pod or workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) found", file)
	}
	if e.ledger, err = loadState(state, stdin, cfg.Devices, logr.Discard()); err != nil {
		return evalObjects{}, false, err
	}
	// The policies the webhook loads from its configuration's directory,
	// then the command line's.
	engine := policy.New(policy.Options{EvalTimeout: cfg.Admission.PolicyEvaluationTimeout})
	var overrides []policy.Source
	for _, dir := range []string{cfg.Policy.Directory, policyDir} {
		if dir != "" {
			overrides = append(overrides, policy.Dir(dir))
		}
	}
	if err := engine.Load(ctx, overrides...); err != nil {
		return evalObjects{}, false, err
	}
	if e.decider, err = decision.New(engine, e.ledger, cfg, logr.Discard()); err != nil {
		return evalObjects{}, false, err
	}
	if e.matcher, err = matchcond.Load(webhookmanifests.WebhooksYAML()); err != nil {
		return evalObjects{}, false, fmt.Errorf("shipped webhook configuration: %w", err)
	}
	out := evalObjects{Allowed: true}
	for _, w := range objs.Workloads {
		o, err := e.object(ctx, w)
		if err != nil {
			return evalObjects{}, false, fmt.Errorf("%s %q: %w", w.Kind, w.Name, err)
		}
		out.Allowed = out.Allowed && o.Allowed
		out.Objects = append(out.Objects, o)
	}
	return out, onePod(objs), nil
}

// object decides the pods of w one after the other, each admitted pod
// recorded in the ledger (as the watch would record it, pending) before
// the next is decided, and stops at the first denial.
func (e *evaluation) object(ctx context.Context, w *manifest.Workload) (evalObject, error) {
	o := evalObject{objectRef: refOf(w)}
	pod := w.Pod.DeepCopy()
	if e.namespace != "" {
		pod.Namespace = e.namespace
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if o.Replicas == manifest.PerNode {
		o.Replicas = e.eligibleNodes(pod)
	}
	o.Allowed = true
	for i := range max(o.Replicas, 1) {
		p := pod.DeepCopy()
		if w.Kind != "Pod" {
			p.Name = fmt.Sprintf("%s-%d", w.Name, i)
		}
		p.UID = types.UID(fmt.Sprintf("gpuadmit-eval/%s/%s/%s/%d", w.Kind, p.Namespace, w.Name, i))
		res, err := e.decider.Decide(ctx, decision.Request{Pod: p, Operation: "CREATE", Written: w.Written})
		if err != nil {
			return o, err
		}
		if i == 0 {
			o.Effective, o.Warnings = res.Effective, res.Warnings
			notConsulted, err := e.notConsulted(ctx, p)
			if err != nil {
				return o, err
			}
			o.Warnings = append(o.Warnings, notConsulted...)
			if o.Replicas == 0 {
				break // nothing to admit; the first pod only shows the demand and warnings
			}
		}
		if !res.Allowed {
			o.Allowed, o.Denials = false, res.Denials
			break
		}
		o.Admitted++
		e.ledger.UpsertPod(p)
	}
	if o.Denials == nil {
		o.Denials = []string{}
	}
	if o.Warnings == nil {
		o.Warnings = []string{}
	}
	return o, nil
}

// eligibleNodes counts the GPU nodes a DaemonSet's pod may run on.
func (e *evaluation) eligibleNodes(pod *corev1.Pod) int64 {
	match := cache.Eligible(pod)
	var n int64
	for _, nc := range e.ledger.Capacity().Nodes {
		if match == nil || match(nc) {
			n++
		}
	}
	return n
}

// notConsulted evaluates the matchConditions of the shipped webhook
// configurations (manifests/webhook/webhooks.yaml) for a CREATE of pod and
// warns when the API server would not call the validating webhook, so that
// the decision would never be made.
func (e *evaluation) notConsulted(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	results, err := e.matcher.Match(ctx, pod)
	if err != nil {
		return nil, fmt.Errorf("the API server would reject the pod: %w", err)
	}
	var warnings []string
	for _, r := range results {
		if r.Kind != matchcond.Validating || r.Called {
			continue
		}
		why := "the validating webhook's matchConditions fail to evaluate and its failurePolicy is Ignore"
		if r.FailedCondition != "" {
			why = fmt.Sprintf("the pod does not meet the validating webhook's matchCondition %s", r.FailedCondition)
		}
		warnings = append(warnings, fmt.Sprintf("the webhook would not be consulted: %s, so the API server admits it without asking gpuadmit", why))
	}
	return warnings, nil
}
