package decision

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Request is one pod admission.
type Request struct {
	Pod *corev1.Pod
	// NoManagedResource is the edge's answer to "is this a GPU pod?"
	// (Decider.Requests, asked once where the review or the manifest is
	// decoded): set, Pod names no managed resource and Decide allows it
	// without evaluating the policies. Decide trusts it and does not ask
	// again; unset, the pod is decided in full, so a caller that did not
	// ask never skips a decision.
	NoManagedResource bool
	// Namespace is the admission request's namespace; "" uses the pod's
	// (and "default" when the pod has none).
	Namespace string
	// Operation is CREATE or UPDATE; "" means CREATE.
	Operation string
	DryRun    bool
	// User is who asked (the AdmissionReview's userInfo).
	User UserInfo
	// Reservations are the namespace's admitted pods the caller would count
	// (the namespace's admission queue reads them from its GPUReservationSet;
	// the command line from a dump): those the ledger has not recorded count
	// beside its usage (reservation.Reservation).
	Reservations []reservation.Reservation
	// Teams are the team quotas (GPUClusterQuotas) that count the
	// request's namespace, each with the reservations the caller counts for
	// it (the admission queue loads the team's GPUReservationSet in the
	// same round as the namespace's; the command line reads them from a
	// dump). The pod must fit every one (and each one's per-user limits).
	Teams []Team
	// ChargedUser is who the pod or claim is charged to: its verified
	// requesting-user stamp (pkg/stamp), or its controller's service
	// account; "" : User.Username.
	ChargedUser string
	// Explain asks for Result.Explanation (tracing the evaluation: many
	// times the cost of a decision; the command line's --explain).
	Explain bool
	// Claim, when set, is a ResourceClaim being created: its demand (the
	// devices of the governed DeviceClasses it asks for) is decided
	// instead of a pod's; Pod is then ignored.
	Claim *resourcev1.ResourceClaim
	// Written, when set, gives a container quantity as the user wrote it
	// (a manifest file); invalid values are shown that way. The API server
	// canonicalises quantities, so the webhook leaves it nil.
	Written func(container, source, resource string) (string, bool)
}

// Team is one team quota that counts the request's namespace.
type Team struct {
	Quota ledger.TeamQuota
	// Members are the namespaces counted: those the quota selects, and
	// those that departed within the grace (still charged to the team).
	Members []string
	// Reservations are the team's reservations the caller would count
	// (reservation.Countable of the team's GPUReservationSet, with those of
	// the reviews decided before this one in the round).
	Reservations []reservation.Reservation
}

// UserInfo is who asked for the admission: the policies read it as
// input.userInfo.
type UserInfo struct {
	Username string
	Groups   []string
}

// Result is the decision for one pod.
type Result struct {
	Allowed bool
	// Effective is the pod's effective demand per family (MiB for memory),
	// as checked against the limits: its containers' and its known
	// templates' claims'; empty for a pod that requests no managed resource
	// or whose request is invalid.
	Effective effective.Usage
	// Reserve is what the admission reserves: a pod's containers' demand
	// alone (its templates' claims are decided and reserved when they are
	// created), a claim's demand; empty when nothing is to be reserved.
	Reserve effective.Usage
	// Denials are the policies' messages when not allowed; Warnings are
	// returned to the client either way.
	Denials  []string
	Warnings []string
	// Exceeded lists, for a denied pod, the limits its demand would pass,
	// its namespace's and its teams' (empty when only other rules denied
	// it).
	Exceeded []LimitCheck
	// Invalid: the request is invalid (an *effective.InvalidError: a value
	// that is not a whole number, a negative one...); the policies deny it.
	Invalid bool
	// OverBudget lists, for a denied pod or claim, the GPU-hour budgets
	// it would pass: spent, or within reach of its activeDeadlineSeconds.
	OverBudget []BudgetCheck
	// FitsWithoutUnconfirmed: denied, but the pod would be allowed if the
	// request's unconfirmed reservations (reservation.Reservation.Unconfirmed),
	// its namespace's and its teams', ended. Its review may wait for them, within its deadline.
	FitsWithoutUnconfirmed bool
	// Explanation is set for a Request with Explain.
	Explanation *Explanation
}

// Snapshotter reads the usage ledger; *ledger.Ledger satisfies it.
type Snapshotter interface {
	Namespace(ns string, pending []reservation.Reservation) ledger.NamespaceSnapshot
	// WaitForNamespace returns once the namespace watch reported ns.
	WaitForNamespace(ctx context.Context, ns string) error
	Capacity() *ledger.Capacity
	// Inventory is the devices the ResourceSlices publish (claims are
	// sized against them).
	Inventory() *dra.Inventory
	// Template is a ResourceClaimTemplate the watch delivered (nil: none).
	Template(ns, name string) *resourcev1.ResourceClaimTemplate
	// NamedClaimCharge is what the recorded ResourceClaim ns/name is
	// charged now (false: none recorded).
	NamedClaimCharge(ns, name string) (effective.Usage, bool)
	// TeamsOf are the team quotas that select namespace ns now.
	TeamsOf(ns string) []ledger.TeamQuota
	// Team is a team quota's usage over members, counting pending, and
	// user's part of it.
	Team(q ledger.TeamQuota, members []string, pending []reservation.Reservation, user string) ledger.TeamSnapshot
}

// Evaluator evaluates the policies on an input document; *policy.Engine
// satisfies it.
type Evaluator interface {
	Eval(ctx context.Context, input ast.Value) (policy.Output, error)
}

// Decider makes admission decisions. It is safe for concurrent use.
type Decider struct {
	policy   Evaluator
	families []effective.Family
	snap     Snapshotter
	claims   *dra.Charger
	// noNodes is input.capacity without nodes, for claims.
	noNodes ast.Value
	log     logr.Logger

	settingsVal ast.Value
	words       words
	memo        *memo
	// budgets, at clock's now, are the GPU-hour budgets admission holds
	// (nil: none); warnPercents are the configured thresholds.
	budgets      Budgets
	clock        clock.PassiveClock
	warnPercents []int64
	// nearLimit is the admission section's nearLimitPercent (input.guard).
	nearLimit int64
	// all caches the view of every node (pods that do not restrict their
	// nodes), keyed by the ledger's immutable Capacity value.
	all atomic.Pointer[cachedView]
}

type cachedView struct {
	capacity *ledger.Capacity
	view     *nodeView
	value    ast.Value
}

// New returns a Decider evaluating engine's policies against the ledger
// snap, reading requests with cfg's devices section and deciding with its
// admission section (the webhook and the command line pass the same
// configuration, defaulted). log receives decisions at V(1).
func New(engine Evaluator, snap Snapshotter, cfg *config.Configuration, log logr.Logger, opts ...Option) (*Decider, error) {
	if errs := config.Validate(cfg); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return newDecider(engine, snap, cfg, config.Families(cfg), log, opts...)
}

// newDecider is New with the device families given (the nvidia family
// first) instead of read from cfg, which must be valid: the package's tests
// build deciders for families the configuration cannot name yet.
func newDecider(engine Evaluator, snap Snapshotter, cfg *config.Configuration, fams []effective.Family, log logr.Logger, opts ...Option,
) (*Decider, error) {
	if len(fams) == 0 {
		return nil, errors.New("no device family")
	}
	sv, err := settingsValue(cfg, fams)
	if err != nil {
		return nil, err
	}
	if log.GetSink() == nil {
		log = logr.Discard()
	}
	claims, err := dra.NewCharger(config.DeviceClasses(cfg), fams, config.ChargerOptions(cfg)...)
	if err != nil {
		return nil, fmt.Errorf("dra.deviceClasses: %w", err)
	}
	noNodes, err := capacityValue(viewOf(nil, nil))
	if err != nil {
		return nil, err
	}
	w := newWords(fams)
	d := &Decider{policy: engine, families: fams, snap: snap, claims: claims, noNodes: noNodes, log: log, settingsVal: sv,
		words: w, memo: newMemo(w), clock: clock.RealClock{}, warnPercents: warnPercents(cfg),
		nearLimit: *cfg.Admission.NearLimitPercent}
	for _, o := range opts {
		o(d)
	}
	return d, nil
}

// Decide decides one admission. An error means no decision could be made
// (the policies failed or ran past the context's deadline); the caller
// applies its failure policy.
func (d *Decider) Decide(ctx context.Context, req Request) (Result, error) {
	switch {
	case req.Claim != nil:
		if !d.claims.Governs(&req.Claim.Spec) {
			return Result{Allowed: true}, nil
		}
		req.Pod = claimPod(req.Claim)
	case req.Pod == nil:
		return Result{}, errors.New("request without a pod")
	case req.NoManagedResource:
		return Result{Allowed: true}, nil
	}
	if req.Operation == "" {
		req.Operation = "CREATE"
	}
	doc, err := d.document(ctx, req)
	if err != nil {
		return Result{}, err
	}
	res, err := d.evaluate(ctx, doc)
	if err != nil {
		return Result{}, err
	}
	if req.Claim == nil {
		res.Warnings = append(res.Warnings, initOnlyClaims(req.Pod)...)
	}
	if v := d.log.V(1); v.Enabled() {
		v.Info("admission decision", "pod", klog.KRef(doc.namespace, req.Pod.Name), "operation", req.Operation,
			"allowed", res.Allowed, "effective", res.Effective.String(), "denials", res.Denials, "warnings", res.Warnings)
	}
	return res, nil
}

// document gathers what the policies read about req: the namespace's
// usage with the request's reservations (first: a review for a namespace
// the ledger does not know waits or fails before any CEL selector runs),
// the pod's demand (sizes resolved against the nodes it may run on) and
// the capacity.
func (d *Decider) document(ctx context.Context, req Request) (*inputDoc, error) {
	ns := cmp.Or(req.Namespace, req.Pod.Namespace, "default")
	nsSnap, err := d.namespace(ctx, ns, req.Reservations)
	if err != nil {
		return nil, err
	}
	if err := d.teamsCounted(ns, req.Teams); err != nil {
		return nil, err
	}
	view, capVal, err := d.nodes(req.Pod)
	if err != nil {
		return nil, err
	}
	if req.Claim != nil {
		capVal = d.noNodes // a claim's devices are its driver's (ResourceSlices), not the nodes' annotated ones
	}
	doc := &inputDoc{req: req, namespace: ns, ns: nsSnap, primary: d.families[0].Name, capacity: capVal, settings: d.settingsVal,
		view: view, nearLimit: d.nearLimit, words: d.words, memo: d.memo}
	if req.Claim != nil {
		doc.view = nil
		doc.demand, err = d.ClaimDemand(ctx, req.Claim)
		doc.reserve = doc.demand
	} else {
		doc.demand, doc.reserve, err = d.podDemand(ctx, req.Pod, view)
	}
	if err != nil {
		var inv *effective.InvalidError
		if !errors.As(err, &inv) {
			return nil, fmt.Errorf("computing the demand of %q: %w", req.Pod.Name, err)
		}
		doc.demand, doc.reserve, doc.invalid = nil, nil, inv.Errors
		inv.AsWritten(req.Written)
	}
	if req.Claim == nil {
		doc.scoped = scopedOf(&doc.ns, req.Pod)
	}
	doc.teams = d.teamChecks(&req)
	if req.Operation == "CREATE" { // a budget holds new pods and claims alone
		doc.budgets, doc.budgetProblems = d.budgetChecks(ns, d.budgetDemand(&req, doc.effUsage()), deadlineOf(&req))
	}
	return doc, nil
}

// namespaceWait bounds how long Decide waits for the namespace watch to
// report a namespace it has not seen (one created a moment ago).
const namespaceWait = 2 * time.Second

// ErrNamespaceUnknown is returned while the namespace's labels are not
// known, so that policies reading input.namespaceLabels cannot be
// evaluated: deciding with no labels could admit a pod a label-based limit
// would deny.
var ErrNamespaceUnknown = errors.New("the namespace watch has not reported the namespace")

// namespace is the ledger's snapshot of ns (counting pending), once the
// namespace watch has reported ns: it waits up to namespaceWait (and the
// context's deadline) for a namespace created a moment before the pod.
func (d *Decider) namespace(ctx context.Context, ns string, pending []reservation.Reservation) (ledger.NamespaceSnapshot, error) {
	s := d.snap.Namespace(ns, pending)
	if s.LabelsKnown {
		return s, nil
	}
	wctx, cancel := context.WithTimeout(ctx, namespaceWait)
	defer cancel()
	if err := d.snap.WaitForNamespace(wctx, ns); err != nil {
		return s, fmt.Errorf("namespace %q: %w (its labels are needed by the policies)", ns, ErrNamespaceUnknown)
	}
	if s = d.snap.Namespace(ns, pending); !s.LabelsKnown { // deleted again meanwhile
		return s, fmt.Errorf("namespace %q: %w (its labels are needed by the policies)", ns, ErrNamespaceUnknown)
	}
	return s, nil
}

// Families are the device families the decider reads requests of.
func (d *Decider) Families() []effective.Family { return d.families }

// Demand is the pod's effective demand as Decide computes it: memory
// percentages and whole-device requests resolved against the largest device
// of the nodes the pod may run on (ledger.Eligible). It is nil for a pod that
// requests no managed resource; an invalid request is an
// *effective.InvalidError. The mutating webhook annotates pods with it.
func (d *Decider) Demand(ctx context.Context, pod *corev1.Pod) (effective.Demands, error) {
	if !d.requestsOwn(pod) {
		return nil, nil
	}
	view, _, err := d.nodes(pod)
	if err != nil {
		return nil, err
	}
	ds, _, err := d.podDemand(ctx, pod, view)
	return ds, err
}
