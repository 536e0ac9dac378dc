package admission

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Webhook names and reasons used as metric labels (a small, fixed set).
const (
	webhookMutate   = "mutate"
	webhookValidate = "validate"
	// webhookValidateClaims is the ResourceClaims handler.
	webhookValidateClaims = "validate-claims"

	reasonGPU        = "gpu"         // a GPU pod: annotated, or allowed and reserved
	reasonNonGPU     = "non-gpu"     // no managed resource: fast path
	reasonDryRun     = "dry-run"     // allowed, nothing reserved
	reasonNotCreate  = "not-create"  // UPDATE and others: no decision
	reasonUnchanged  = "unchanged"   // annotation already right (reinvocation)
	reasonUnresolved = "unresolved"  // memory percentage of an unknown device
	reasonInvalid    = "invalid"     // invalid GPU request (validation denies it)
	reasonPolicy     = "policy"      // denied by the policy
	reasonBadRequest = "bad-request" // malformed review
	reasonNotReady   = "not-ready"   // watches not synced, no policy, or stale watches in deny mode
	reasonError      = "error"       // decision or reservation failed
)

// Metrics are the handlers' Prometheus collectors. A nil *Metrics records
// nothing.
type Metrics struct {
	decisions    *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	reservations prometheus.Counter
}

// NewMetrics creates the collectors and registers them on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuadmit_admission_decisions_total",
			Help: "Admission answers by webhook (mutate, validate), verdict (allowed, denied, error) and reason.",
		}, []string{"webhook", "verdict", "reason"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpuadmit_admission_duration_seconds",
			Help:    "Time to decide one admission review, by webhook.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}, []string{"webhook"}),
		reservations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gpuadmit_reservations_total",
			Help: "Demands reserved in the namespaces' GPUUsage objects for admitted pods.",
		}),
	}
	for _, c := range []prometheus.Collector{m.decisions, m.latency, m.reservations} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering admission metrics: %w", err)
		}
	}
	return m, nil
}

func (m *Metrics) observe(webhook string, resp admission.Response, reason string, start time.Time) {
	if m == nil {
		return
	}
	verdict := "allowed"
	switch {
	case resp.Allowed:
	case resp.Result != nil && resp.Result.Code >= 400 && resp.Result.Code != 403:
		verdict = "error"
	default:
		verdict = "denied"
	}
	m.decisions.WithLabelValues(webhook, verdict, reason).Inc()
	m.latency.WithLabelValues(webhook).Observe(time.Since(start).Seconds())
}

func (m *Metrics) reserved() {
	if m != nil {
		m.reservations.Inc()
	}
}
