package server

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/cache"
	"github.com/gpuadmit/gpuadmit/policy"
)

// registerStateMetrics registers gauges read at scrape time: the ledger's
// sizes and the policy engine's status.
func registerStateMetrics(reg prometheus.Registerer, l *cache.Ledger, e *policy.Engine) error {
	stat := func(f func(cache.Stats) int) func() float64 {
		return func() float64 { return float64(f(l.Snapshot().Stats)) }
	}
	cs := []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_ledger_pods",
			Help: "GPU pods recorded in the usage ledger."}, stat(func(s cache.Stats) int { return s.Pods })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_ledger_namespaces",
			Help: "Namespaces with GPU usage, reservations or GPU quotas in the ledger."}, stat(func(s cache.Stats) int { return s.Namespaces })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gpuadmit_ledger_reservations",
			Help: "Unexpired reservations of admitted pods the watch has not seen yet."}, stat(func(s cache.Stats) int { return s.Reservations })),
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

// policyMetrics count policy reloads by result.
type policyMetrics struct{ reloads *prometheus.CounterVec }

func newPolicyMetrics(reg prometheus.Registerer) (*policyMetrics, error) {
	m := &policyMetrics{reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuadmit_policy_reloads_total",
		Help: "Policy reloads from ConfigMaps or the policy directory, by result (activated, rejected).",
	}, []string{"result"})}
	if err := reg.Register(m.reloads); err != nil {
		return nil, fmt.Errorf("registering policy metrics: %w", err)
	}
	return m, nil
}
