package admission

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// Webhook names and reasons used as metric labels (a small, fixed set).
const (
	webhookMutate   = "mutate"
	webhookValidate = "validate"
	// webhookValidateClaims is the ResourceClaims handler.
	webhookValidateClaims = "validate-claims"
	// webhookValidateWorkloads is the workloads handler.
	webhookValidateWorkloads = "validate-workloads"
	// webhookMutateWorkloads stamps workloads' pod templates.
	webhookMutateWorkloads = "mutate-workloads"
	// webhookMutateClaims stamps ResourceClaims.
	webhookMutateClaims = "mutate-claims"

	reasonGPU        = "gpu"         // a GPU pod: annotated, or allowed and reserved
	reasonNonGPU     = "non-gpu"     // no managed resource: fast path
	reasonDryRun     = "dry-run"     // allowed, nothing reserved
	reasonNotCreate  = "not-create"  // UPDATE and others: no decision
	reasonUnchanged  = "unchanged"   // annotation already right (reinvocation)
	reasonUnresolved = "unresolved"  // memory percentage of an unknown device
	reasonInvalid    = "invalid"     // invalid GPU request (validation denies it)
	reasonQuota      = "quota"       // denied: the demand passes a ResourceQuota limit
	reasonPolicy     = "policy"      // denied by a policy rule, no limit passed
	reasonBadRequest = "bad-request" // malformed review
	reasonNotReady   = "not-ready"   // watches not synced, no policy, or stale watches in deny mode
	reasonError      = "error"       // decision or reservation failed
)

// MaxNamespaceLabels bounds the namespace label of
// gpuadmit_admission_decisions_total: the first MaxNamespaceLabels distinct
// namespaces a process answers reviews of keep their name, every other one
// counts as OtherNamespace.
const MaxNamespaceLabels = 200

// OtherNamespace is the namespace label of the reviews of namespaces beyond
// MaxNamespaceLabels, and of reviews whose namespace is not a valid
// namespace name (a hand-made review): no namespace can be called that, a
// namespace's name is a DNS label.
const OtherNamespace = "_other"

// Metrics are the handlers' Prometheus collectors. A nil *Metrics records
// nothing.
type Metrics struct {
	decisions    *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	reservations prometheus.Counter
	workloads    *prometheus.CounterVec
	namespaces   namespaceLabels
}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuadmit_admission_decisions_total",
			Help: fmt.Sprintf("Admission answers by webhook (mutate, validate, validate-claims), verdict (allowed, denied, error), reason "+
				"and namespace (the review's: the first %d distinct ones by name, any other as %s; empty for a review without one).",
				MaxNamespaceLabels, OtherNamespace),
		}, []string{"webhook", "verdict", "reason", "namespace"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpuadmit_admission_duration_seconds",
			Help:    "Time to decide one admission review, by webhook.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"webhook"}),
		reservations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuadmit_reservations_total",
			Help: "Demands reserved in the namespaces' GPUUsage objects for admitted pods.",
		}),
		workloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuadmit_workload_checks_total",
			Help: "Workload checks (validate-workloads) by the workload's kind (one gpuadmit reads) and verdict (allowed, denied, error).",
		}, []string{"kind", "verdict"}),
		namespaces: namespaceLabels{max: MaxNamespaceLabels, seen: map[string]struct{}{}},
	}
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.reservations, m.workloads} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering admission metrics: %w", err)
		}
	}
	return m, nil
}

// observe counts one answer of webhook to a review of namespace.
func (m *Metrics) observe(webhook, namespace string, resp admission.Response, reason string, start time.Time) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(webhook, verdictOf(resp), reason, m.namespaces.label(namespace)).Inc()
	m.latency.WithLabelValues(webhook).Observe(time.Since(start).Seconds())
}

// verdictOf is an answer's verdict label: allowed, denied or error.
func verdictOf(resp admission.Response) string {
	switch {
	case resp.Allowed:
		return "allowed"
	case resp.Result != nil && resp.Result.Code >= 400 && resp.Result.Code != 403:
		return "error"
	}
	return "denied"
}

// workload counts one workload check of a kind gpuadmit reads ("" : none).
func (m *Metrics) workload(kind string, resp admission.Response) {
	if m != nil && kind != "" {
		m.workloads.WithLabelValues(kind, verdictOf(resp)).Inc()
	}
}

func (m *Metrics) reserved() {
	if m != nil {
		m.reservations.Inc()
	}
}

// denialReason is the reason a denial counts under: invalid (the request
// is), quota (its demand passes a limit), else policy (another rule).
func denialReason(res decision.Result) string {
	switch {
	case res.Invalid:
		return reasonInvalid
	case len(res.Exceeded) > 0:
		return reasonQuota
	}
	return reasonPolicy
}

// namespaceLabels hands out the values of the namespace label: a
// namespace keeps its name once it was seen while fewer than max were.
type namespaceLabels struct {
	mu   sync.Mutex
	max  int
	seen map[string]struct{}
}

func (n *namespaceLabels) label(ns string) string {
	if ns == "" {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.seen[ns]; ok {
		return ns // validated when first seen: the common case costs one lookup
	}
	if len(n.seen) >= n.max || len(validation.IsDNS1123Label(ns)) > 0 {
		return OtherNamespace
	}
	n.seen[ns] = struct{}{}
	return ns
}
