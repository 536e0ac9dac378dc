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

	webhookmanifests "github.com/gpuadmit/gpuadmit/manifests/webhook"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
	"github.com/gpuadmit/gpuadmit/policy"
)

// evalOutput is the JSON of DESIGN.md section 5 for `gpuadmit eval`.
type evalOutput struct {
	Allowed   bool             `json:"allowed"`
	Effective effective.Vector `json:"effective"`
	Denials   []string         `json:"denials"`
	Warnings  []string         `json:"warnings"`
}

const evalUsage = "usage: gpuadmit eval -f POD.yaml --state STATE.yaml [--config CFG] [--policy DIR] [--namespace NS]"

// evalTimeout bounds loading the policies and deciding.
const evalTimeout = time.Minute

func runEval(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuadmit eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "pod manifest (YAML or JSON; - for standard input)")
	state := fs.String("state", "", "cluster state: Pods, Nodes and ResourceQuotas as `kubectl get -o yaml` prints them (- for standard input)")
	cfgPath := fs.String("config", "", "gpuadmit/HAMi device config file (default: HAMi's defaults)")
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
	res, err := evaluate(*file, *state, *cfgPath, *policyDir, *namespace, stdin)
	if err != nil {
		return fail(stderr, "eval", err)
	}
	out := evalOutput{Allowed: res.Allowed, Effective: res.Effective, Denials: res.Denials, Warnings: res.Warnings}
	if out.Denials == nil {
		out.Denials = []string{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if err := writeJSON(stdout, out); err != nil {
		return fail(stderr, "eval", err)
	}
	if !res.Allowed {
		return 1
	}
	return 0
}

// evaluate makes the webhook's decision for a CREATE of the pod in file in
// a cluster holding state.
func evaluate(file, state, cfgPath, policyDir, namespace string, stdin io.Reader) (decision.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	cfg, err := loadConfig(cfgPath)
	if err != nil {
		return decision.Result{}, err
	}
	objs, err := manifest.ReadFile(file, stdin)
	if err != nil {
		return decision.Result{}, err
	}
	if len(objs.Pods) != 1 {
		return decision.Result{}, fmt.Errorf("%s: found %d Pods, want exactly one", file, len(objs.Pods))
	}
	ledger, err := loadState(state, stdin, cfg.NVIDIA, logr.Discard())
	if err != nil {
		return decision.Result{}, err
	}
	engine := policy.New(policy.Options{})
	var overrides []policy.Source
	if policyDir != "" {
		overrides = append(overrides, policy.Dir(policyDir))
	}
	if err := engine.Load(ctx, overrides...); err != nil {
		return decision.Result{}, err
	}
	d, err := decision.New(engine, cfg.NVIDIA, ledger, decision.Options{})
	if err != nil {
		return decision.Result{}, err
	}
	res, err := d.Decide(ctx, decision.Request{Pod: objs.Pods[0], Namespace: namespace, Operation: "CREATE"})
	if err != nil {
		return decision.Result{}, err
	}
	notConsulted, err := notConsultedWarnings(ctx, objs.Pods[0], namespace)
	if err != nil {
		return decision.Result{}, err
	}
	res.Warnings = append(res.Warnings, notConsulted...)
	return res, nil
}

// notConsultedWarnings evaluates the matchConditions of the shipped webhook
// configurations (manifests/webhook/webhooks.yaml) for a CREATE of pod in
// namespace ("" for the pod's) and warns when the API server would not call
// the validating webhook, so that the decision would never be made.
func notConsultedWarnings(ctx context.Context, pod *corev1.Pod, namespace string) ([]string, error) {
	m, err := matchcond.Load(webhookmanifests.WebhooksYAML())
	if err != nil {
		return nil, fmt.Errorf("shipped webhook configuration: %w", err)
	}
	ns := namespace
	if ns == "" {
		ns = pod.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	if ns != pod.Namespace {
		pod = pod.DeepCopy()
		pod.Namespace = ns
	}
	results, err := m.Match(ctx, pod)
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
