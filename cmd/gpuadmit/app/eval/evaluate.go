package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	effectivecmd "github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/effective"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	webhookmanifests "github.com/gpuadmit/gpuadmit/manifests/webhook"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/matchcond"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Evaluation makes the webhook's decisions for the pods and ResourceClaims
// of a manifest in a cluster holding a state.
type Evaluation struct {
	// namespace is -n: the namespace of every request, when set.
	Namespace string
	// fallback is the namespace of a pod that names none (without -n).
	fallback string
	Source   source.Source
	// warn reports what the state leaves out.
	Warn func(string)
	// Strict refuses an object whose own namespace is not Namespace, as
	// kubectl does (a policy suite's case sets the namespace of its pods
	// instead).
	Strict bool
	// explain asks the decider which rules produced each message.
	explain bool
	// user is who asks; set, it is not read from the source.
	User *decision.UserInfo
	// setup is the configuration, and the policies run loads unless
	// engine is set.
	Setup  setup.Setup
	Engine *policy.Engine
	// Clock is the moment the budgets are computed at (nil: the real
	// clock).
	Clock  clock.PassiveClock
	ledger *ledger.Ledger
	// budgets track the state's GPU-hour budgets (nil: none).
	budgets *budget.Tracker
	// reserved are the namespaces' GPUReservationSet reservations (live only).
	reserved map[string][]reservation.Reservation
	decider  *decision.Decider
	matcher  *matchcond.Matcher
	// kinds are the workload kinds the configuration reads.
	kinds *workload.Kinds
	// expandErrs are the custom workloads whose pod sets cannot be read.
	expandErrs []error
	// PodsAsRequester decides a workload's pods as the requesting user
	// instead of the identity its controller creates pods as.
	PodsAsRequester bool
}

// Run evaluates every object of the manifests against the source's
// state; single reports that they are exactly one Pod. A file that cannot
// be read, an object that cannot be decided and (strict) one whose
// namespace is not -n's are each one error of the result's Failed, the
// others decided; none decided is an error.
func (e *Evaluation) Run(ctx context.Context, in cmdline.ManifestFlags, stdin io.Reader) (Objects, bool, error) {
	objs, failed, err := e.read(in, stdin)
	if objs == nil {
		return Objects{}, false, err
	}
	if e.Strict {
		failed = append(failed, e.mismatched(objs)...)
		if len(objs.Workloads) == 0 {
			return Objects{}, false, errors.Join(failed...)
		}
	}
	if e.Namespace == "" {
		if e.fallback, err = e.Source.Namespace(); err != nil {
			return Objects{}, false, err
		}
	}
	if err := e.loadState(ctx, objs); err != nil {
		return Objects{}, false, err
	}
	if err := e.prepare(ctx); err != nil {
		return Objects{}, false, err
	}
	if r, missing := e.webhookDecides(); r != nil {
		out, err := e.byWebhook(ctx, objs, r, missing)
		out.Failed = failed
		return out, effectivecmd.OnePod(objs) && len(failed) == 0, err
	}
	out := Objects{Allowed: true, primary: e.decider.Families()[0].Name, decidedBy: decidedLocally, Failed: failed}
	for _, w := range objs.Workloads {
		o, err := e.object(ctx, w)
		if err != nil {
			out.Failed = append(out.Failed, effectivecmd.ObjectError(w, err))
			continue
		}
		out.Allowed = out.Allowed && o.Allowed
		out.Objects = append(out.Objects, o)
	}
	if len(out.Objects) == 0 {
		return Objects{}, false, errors.Join(out.Failed...)
	}
	return out, effectivecmd.OnePod(objs) && len(out.Failed) == 0, nil
}

// read reads the manifests, the configured custom workloads among them:
// the objects (nil with the error when there are none to decide) and the
// files and objects that failed.
func (e *Evaluation) read(in cmdline.ManifestFlags, stdin io.Reader) (*manifest.Objects, []error, error) {
	if err := e.loadKinds(); err != nil {
		return nil, nil, err
	}
	objs, err := in.ReadExpanded(stdin, e.expandCustom)
	if objs == nil {
		return nil, nil, err
	}
	return objs, append(cmdline.Unwrapped(err), e.expandErrs...), nil
}

// mismatched takes out of objs the objects whose own namespace is not
// -n's and returns their errors, as kubectl refuses them.
func (e *Evaluation) mismatched(objs *manifest.Objects) []error {
	if e.Namespace == "" {
		return nil
	}
	var errs []error
	objs.Workloads = slices.DeleteFunc(objs.Workloads, func(w *manifest.Workload) bool {
		if w.Namespace == "" || w.Namespace == e.Namespace {
			return false
		}
		errs = append(errs, effectivecmd.ObjectError(w, namespaceMismatch{object: w.Namespace, flag: e.Namespace}))
		return true
	})
	return errs
}

// namespaceMismatch is an object whose namespace is not -n's: kubectl's
// error, word for word.
type namespaceMismatch struct{ object, flag string }

func (m namespaceMismatch) Error() string {
	return fmt.Sprintf("the namespace from the provided object %q does not match the namespace %q. You must pass '--namespace=%s' to perform this operation.",
		m.object, m.flag, m.object)
}

// loadState reads the source's ledger and reservations for the namespaces
// the objects of objs are decided in, and warns of each of them the state
// does not hold (it is added without labels). The ResourceClaimTemplates
// of objs are added to the state, in those namespaces: a pod's templates'
// claims are part of its demand.
func (e *Evaluation) loadState(ctx context.Context, objs *manifest.Objects) error {
	var namespaces []string
	for _, w := range objs.Workloads {
		if ns := e.namespaceOf(w.Namespace); !slices.Contains(namespaces, ns) {
			namespaces = append(namespaces, ns)
		}
	}
	ch, err := source.ChargingOf(e.Setup.Cfg)
	if err != nil {
		return err
	}
	if e.ledger, e.reserved, err = e.Source.Ledger(ctx, ch, namespaces, true); err != nil {
		return err
	}
	if teams := e.Source.Teams(); teams != nil {
		for _, w := range teams.Warnings { // a dump's (the cluster's are said as read)
			e.Warn(w)
		}
	}
	e.trackBudgets(ch)
	for _, t := range objs.ClaimTemplates {
		t = t.DeepCopy()
		t.Namespace = e.namespaceOf(t.Namespace)
		e.ledger.UpsertTemplate(t)
	}
	for _, ns := range namespaces {
		if _, dump := e.Source.(source.Dump); !dump {
			// Live, a namespace the API server does not have is an error, as
			// the API server refuses a pod there (a dump's is a warning).
			if err := source.NamespaceExists(ctx, e.Source, e.ledger, ns); err != nil {
				return err
			}
		}
		if !e.ledger.Namespace(ns, nil).LabelsKnown {
			e.Warn(fmt.Sprintf("namespace %q is not in the state: the policies see no namespace labels", ns))
			e.ledger.UpsertNamespace(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		}
		for _, p := range e.ledger.Namespace(ns, nil).Problems { // its ResourceQuota keys not enforced as written
			if p.Kind == ledger.ProblemQuota || p.Kind == ledger.ProblemUngoverned {
				e.Warn(p.String())
			}
		}
	}
	return nil
}

// prepare sets up what deciding needs beside the state: the user (unless
// set), the policy engine (loaded unless set), the decider and the shipped
// webhook configuration's match conditions.
func (e *Evaluation) prepare(ctx context.Context) error {
	var err error
	if e.User == nil {
		var u decision.UserInfo
		if u, err = e.Source.User(ctx); err != nil {
			return err
		}
		e.User = &u
	}
	engine := e.Engine
	if engine == nil {
		if engine, err = e.Setup.Engine(ctx); err != nil {
			return err
		}
	}
	var opts []decision.Option
	if e.budgets != nil {
		opts = append(opts, decision.WithBudgets(e.budgets, e.clock()))
	}
	if e.decider, err = decision.New(engine, e.ledger, e.Setup.Cfg, logr.Discard(), opts...); err != nil {
		return err
	}
	if e.matcher, err = matchcond.Load(webhookmanifests.WebhooksYAML()); err != nil {
		return fmt.Errorf("shipped webhook configuration: %w", err)
	}
	return nil
}

// object decides the pods of w one after the other, each admitted pod
// recorded in the ledger (as the watch would record it, pending) before
// the next is decided, and stops at the first denial.
func (e *Evaluation) object(ctx context.Context, w *manifest.Workload) (evalObject, error) {
	if w.Claim != nil {
		return e.claim(ctx, w)
	}
	o := evalObject{ObjectRef: effectivecmd.RefOf(w), evaluatedIn: e.namespaceOf(w.Namespace)}
	verdict, err := e.workloadVerdict(ctx, w, o.evaluatedIn) // before its pods are counted
	if err != nil {
		return o, err
	}
	o, err = e.pods(ctx, w, o)
	return withVerdict(o, verdict), err
}

// pods decides the pods of w one after the other, as its controller
// creates them (podUser), into o.
func (e *Evaluation) pods(ctx context.Context, w *manifest.Workload, o evalObject) (evalObject, error) {
	pod := w.Pod.DeepCopy()
	pod.Namespace = o.evaluatedIn
	if o.Replicas == manifest.PerNode {
		o.Replicas = e.eligibleNodes(pod)
	}
	user := e.podUser(w)
	o.Allowed = true
	gpu := e.decider.Requests(pod) // asked once, where the manifest is decoded
	for i := range max(o.Replicas, 1) {
		p := pod.DeepCopy()
		if w.Kind != "Pod" {
			p.Name = fmt.Sprintf("%s-%d", w.Name, i)
		}
		p.UID = types.UID(fmt.Sprintf("gpuadmit-eval/%s/%s/%s/%d", w.Kind, p.Namespace, w.Name, i))
		// The pods are charged to whoever created the workload (its
		// template's stamp), whichever controller creates them.
		res, err := e.decider.Decide(ctx, decision.Request{Pod: p, NoManagedResource: !gpu, Operation: "CREATE", Written: w.Written, User: user, Explain: e.explain,
			Reservations: e.reserved[p.Namespace], Teams: e.Source.Teams().For(e.ledger, p.Namespace), ChargedUser: e.User.Username})
		if err != nil {
			return o, err
		}
		if i == 0 || !res.Allowed {
			o.Explanation = res.Explanation // of the pod whose messages are shown
		}
		if i == 0 {
			o.Effective, o.Families = evalEffective(res.Effective, e.decider.Families()[0].Name)
			o.Warnings = res.Warnings
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

// namespaceOf is the namespace an object of namespace ns is decided in:
// -n, else ns, else the fallback.
func (e *Evaluation) namespaceOf(ns string) string {
	switch {
	case e.Namespace != "":
		return e.Namespace
	case ns != "":
		return ns
	}
	return e.fallback
}

// eligibleNodes counts the GPU nodes a DaemonSet's pod may run on.
func (e *Evaluation) eligibleNodes(pod *corev1.Pod) int64 {
	match := ledger.Eligible(pod)
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
func (e *Evaluation) notConsulted(ctx context.Context, pod *corev1.Pod) ([]string, error) {
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
