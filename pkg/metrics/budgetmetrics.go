package metrics

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// BudgetStandings is what the budget collector reads: the standing now of
// every GPU-hour budget this replica tracks (*budget.Tracker). Every
// replica tracks every budget from the same watches, so every replica
// exports the series (the alerts take the highest use of the replicas).
type BudgetStandings interface {
	All(now time.Time) []budget.Standing
}

// budgetCollector exposes, per GPU-hour budget (GPUBudget,
// GPUClusterBudget) and limited resource, at scrape time, with labels
// {kind, namespace ("" for a GPUClusterBudget), name, resource}:
//
//   - gpuadmit_budget_hard_hours: the limit in resource-hours
//     (device-hours, MiB-hours, core-hours);
//   - gpuadmit_budget_used_hours: the burn in the current window now;
//   - gpuadmit_budget_burn_rate_hours: the burn of the last hour, in
//     resource-hours per hour;
//   - gpuadmit_budget_window_end_timestamp_seconds: when the window ends
//     (a rolling window: now);
//   - gpuadmit_budget_projected_exhaustion_timestamp_seconds: when the
//     burn rate would reach the limit, only while that is within the
//     window (a calendar window: before it ends; a rolling one: within its
//     length) and the limit is not reached yet.
//
// At most budgets × resources × 5 series.
type budgetCollector struct {
	budgets                         BudgetStandings
	clock                           clock.PassiveClock
	hard, used, rate, end, exhausts *prometheus.Desc
}

// RegisterBudgets registers the budget collector, reading the standings
// at clk's now.
func RegisterBudgets(reg prometheus.Registerer, b BudgetStandings, clk clock.PassiveClock) error {
	if err := reg.Register(newBudgetCollector(b, clk)); err != nil {
		return fmt.Errorf("registering budget metrics: %w", err)
	}
	return nil
}

func newBudgetCollector(b BudgetStandings, clk clock.PassiveClock) *budgetCollector {
	labels := []string{"kind", "namespace", "name", "resource"}
	desc := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, labels, nil) }
	return &budgetCollector{budgets: b, clock: clk,
		hard: desc("gpuadmit_budget_hard_hours",
			"A GPU-hour budget's limit on a resource in its window, in resource-hours (device-hours, MiB-hours or core-hours)."),
		used: desc("gpuadmit_budget_used_hours",
			"What the pods and claims of a GPU-hour budget's namespaces burned of a resource in the current window, in resource-hours."),
		rate: desc("gpuadmit_budget_burn_rate_hours",
			"A GPU-hour budget's burn of a resource over the last hour, in resource-hours per hour."),
		end: desc("gpuadmit_budget_window_end_timestamp_seconds",
			"When a GPU-hour budget's current window ends (a rolling window: now), in seconds since the epoch."),
		exhausts: desc("gpuadmit_budget_projected_exhaustion_timestamp_seconds",
			"When a GPU-hour budget's resource would be spent at the last hour's burn rate, in seconds since the epoch; no series unless that is within the window and the limit is not reached yet.")}
}

func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hard, c.used, c.rate, c.end, c.exhausts} {
		ch <- d
	}
}

func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.clock.Now()
	for _, s := range c.budgets.All(now) {
		for _, r := range s.Resources {
			lbls := []string{s.Kind, s.Namespace, s.Name, string(r.Resource)}
			ch <- prometheus.MustNewConstMetric(c.hard, prometheus.GaugeValue, hours(r.Hard), lbls...)
			ch <- prometheus.MustNewConstMetric(c.used, prometheus.GaugeValue, hours(r.Used), lbls...)
			ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, hours(r.RatePerHour), lbls...)
			if !s.WindowEnd.IsZero() {
				ch <- prometheus.MustNewConstMetric(c.end, prometheus.GaugeValue, seconds(s.WindowEnd), lbls...)
			}
			if at, ok := ProjectedExhaustion(s, r, now); ok {
				ch <- prometheus.MustNewConstMetric(c.exhausts, prometheus.GaugeValue, seconds(at), lbls...)
			}
		}
	}
}

// ProjectedExhaustion is when r of the budget s would reach its limit at
// its burn rate from now: false when it never would within the window (a
// calendar window: before it ends; a rolling window, whose end is always
// now: within its length), when nothing burns, or when the limit is
// reached already.
func ProjectedExhaustion(s budget.Standing, r budget.ResourceStanding, now time.Time) (time.Time, bool) {
	return budget.Exhaustion(s, r, now)
}

// hours is a in resource-hours.
func hours(a burn.Amount) float64 { return float64(a) / burn.MillisPerHour }

// seconds is t in seconds since the epoch.
func seconds(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }
