package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/admitqueue"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/policy"
)

// Ledger is what the collectors read of the usage ledger (*ledger.Ledger).
type Ledger interface {
	Stats() ledger.Stats
	Families() []effective.Family
	Snapshot(pending map[string][]reservation.Reservation) ledger.Snapshot
}

// PolicyStatus is the policy engine's status (*policy.Engine).
type PolicyStatus interface {
	Status() policy.Status
}

// Freshness says, per watched resource, whether its watch is stale
// (*feed.Feed).
type Freshness interface {
	Freshness() map[string]bool
}

// RegisterState registers gauges read at scrape time: the ledger's
// sizes, the policy engine's status and the watches' freshness.
func RegisterState(reg prometheus.Registerer, l Ledger, e PolicyStatus, feed Freshness, store reservation.Reader) error {
	stat := func(f func(ledger.Stats) int) func() float64 {
		return func() float64 { return float64(f(l.Stats())) }
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_ledger_pods",
			Help: "GPU pods recorded in the usage ledger."}, stat(func(s ledger.Stats) int { return s.Pods })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_ledger_namespaces",
			Help: "Namespaces with GPU usage, reservations or GPU quotas in the ledger."}, stat(func(s ledger.Stats) int { return s.Namespaces })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_ledger_reservations",
			Help: "Reservations of admitted pods, in the namespaces' GPUUsage objects, that this replica counts (its watch has not recorded them yet)."},
			func() float64 { return float64(counted(store)) }),
		&freshnessCollector{feed: feed, desc: prometheus.NewDesc("gpuadmit_feed_stale",
			"1 when the watch of a resource has delivered nothing for longer than it should (see the server's log).", []string{"resource"}, nil)},
		newNamespaceCollector(l, store),
		newDeviceCollector(l),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_policy_active",
			Help: "1 when a policy set is active."}, func() float64 {
			if e.Status().Revision != "" {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_policy_last_load_failed",
			Help: "1 when the last policy load was rejected (the previous set stays active)."}, func() float64 {
			if e.Status().LastError != "" {
				return 1
			}
			return 0
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gpuadmit_policy_load_failures_total",
			Help: "Policy sets rejected since start."}, func() float64 { return float64(e.Status().Failures) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("registering state metrics: %w", err)
		}
	}
	return nil
}

// counted is how many reservations of store's this replica counts (-1
// when they cannot be read).
func counted(store reservation.Reader) int {
	pending, err := store.Reserved(context.Background())
	if err != nil {
		return -1
	}
	n := 0
	for _, rs := range pending {
		n += len(rs)
	}
	return n
}

// freshnessCollector reports each watch's staleness at scrape time.
type freshnessCollector struct {
	feed Freshness
	desc *prometheus.Desc
}

func (c *freshnessCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *freshnessCollector) Collect(ch chan<- prometheus.Metric) {
	for resource, stale := range c.feed.Freshness() {
		v := 0.0
		if stale {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, v, resource)
	}
}

// Counters are the counters of the reservation store (admitqueue.Metrics)
// and of the elected replica's summary writes.
type Counters struct {
	reservationsEnded    *prometheus.CounterVec
	reservationsRefused  *prometheus.CounterVec
	reservationConflicts *prometheus.CounterVec
	writes               prometheus.Histogram
	groups               prometheus.Histogram
	summaries            prometheus.Counter
}

// NewCounters registers the Counters on reg.
func NewCounters(reg prometheus.Registerer) (*Counters, error) {
	m := &Counters{
		reservationsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuadmit_reservations_ended_total",
			Help: "Reservations this replica removed from GPUUsage objects, by reason: recorded (every live replica recorded the pod), absent (a read confirmed the pod does not exist: its create failed after admission).",
		}, []string{"reason"}),
		reservationsRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuadmit_reservations_refused_total",
			Help: "Admissions refused instead of reserved, by reason: limit (the namespace's GPUReservationSet holds admission.reservations.maxPerNamespace reservations), duplicate (the pod's UID is already reserved with another name or demand, or already a recorded pod: a review that is not the API server's).",
		}, []string{"reason"}),
		reservationConflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuadmit_reservation_conflicts_total",
			Help: "Reservation writes refused because another write of the namespace's GPUReservationSet came first (the decision was made again), by the cause of that write: admission (it added a reservation), tidy (it only marked, removed or restored reservations), unknown (the object read after the conflict does not say). The summaries users read are in GPUUsage, another object: they never make a conflict.",
		}, []string{"cause"}),
		writes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuadmit_gpuusage_write_duration_seconds",
			Help:    "Time of one GPUReservationSet status write (reservations added or tidied), conflicting ones included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		groups: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gpuadmit_gpuusage_write_group_size",
			Help:    "Reviews decided together for one GPUReservationSet status write (the reviews that queued while the previous write of the namespace was in flight).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128},
		}),
	}
	m.summaries = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gpuadmit_usage_summary_writes_total",
		Help: "GPUUsage summaries (usage, printer columns, conditions) this replica wrote; only the elected replica writes them.",
	})
	// Every series exists from the start, so that rate() and alerts see the first one.
	for _, r := range []string{admitqueue.EndRecorded, admitqueue.EndAbsent} {
		m.reservationsEnded.WithLabelValues(r)
	}
	for _, r := range []string{admitqueue.RefusedLimit, admitqueue.RefusedDuplicate} {
		m.reservationsRefused.WithLabelValues(r)
	}
	for _, c := range []string{admitqueue.ConflictAdmission, admitqueue.ConflictTidy, admitqueue.ConflictUnknown} {
		m.reservationConflicts.WithLabelValues(c)
	}
	for _, c := range []prometheus.Collector{m.reservationsEnded, m.reservationsRefused, m.reservationConflicts, m.writes, m.groups, m.summaries} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering reservation metrics: %w", err)
		}
	}
	return m, nil
}

var _ admitqueue.Metrics = (*Counters)(nil)

// Ended counts a reservation removed, by reason (admitqueue.Metrics).
func (m *Counters) Ended(reason string) { m.reservationsEnded.WithLabelValues(reason).Inc() }

// Conflict counts a reservation write another replica won, by the cause
// of the write that came first (admitqueue.Metrics).
func (m *Counters) Conflict(cause string) { m.reservationConflicts.WithLabelValues(cause).Inc() }

// Refused counts an admission refused instead of reserved, by reason
// (admitqueue.Metrics).
func (m *Counters) Refused(reason string) { m.reservationsRefused.WithLabelValues(reason).Inc() }

// Wrote observes one GPUReservationSet status write (admitqueue.Metrics).
func (m *Counters) Wrote(took time.Duration, reviews int) {
	m.writes.Observe(took.Seconds())
	m.groups.Observe(float64(reviews))
}

// SummaryWritten counts a summary the elected replica wrote.
func (m *Counters) SummaryWritten() { m.summaries.Inc() }
