package metrics

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// fixedStandings are the standings of the budget collector's tests, the
// moment asked recorded.
type fixedStandings struct {
	list  []budget.Standing
	asked time.Time
}

func (f *fixedStandings) All(now time.Time) []budget.Standing {
	f.asked = now
	return f.list
}

const h = burn.MillisPerHour

func standing(kind, ns, name, window string, start, end time.Time, rs ...budget.ResourceStanding) budget.Standing {
	return budget.Standing{Kind: kind, Namespace: ns, Name: name, Window: window, WindowStart: start, WindowEnd: end, Resources: rs}
}

func res(name corev1.ResourceName, hard, used, rate burn.Amount) budget.ResourceStanding {
	return budget.ResourceStanding{Resource: name, Hard: hard, Used: used, RatePerHour: rate}
}

// TestBudgetMetrics: every limited resource of every budget has its hard,
// used and rate in resource-hours, read at the collector's clock; the
// projected exhaustion appears only when the rate would spend the rest
// within the window: not past a calendar window's end, not once spent or
// overrun, not without a burn, within a rolling window's length; a
// saturated use does not panic.
func TestBudgetMetrics(t *testing.T) {
	now := time.Date(2027, 3, 10, 12, 0, 0, 0, time.UTC)
	monthStart, monthEnd := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC)
	f := &fixedStandings{list: []budget.Standing{
		standing(budget.KindBudget, "ml", "hours", "Monthly UTC", monthStart, monthEnd,
			res("nvidia.com/gpu", 100*h, 90*h, 2*h),     // 5 h left: exhausts at 17:00
			res("nvidia.com/gpumem", 1000*h, 10*h, 1*h), // 990 h at 1/h: past the window's end
		),
		standing(budget.KindClusterBudget, "", "team", "rolling 24h0m0s", now.Add(-24*time.Hour), now,
			res("nvidia.com/gpu", 48*h, 24*h, 2*h),                     // 12 h: within 24 h
			res("nvidia.com/gpucores", 10*h, 10*h, h),                  // spent: no projection
			res("nvidia.com/gpumem", 10*h, 11*h, h),                    // overrun: none
			res("example.com/fpga", 10*h, 0, 0),                        // nothing burns: none
			res("example.com/huge", math.MaxInt64, math.MaxInt64-1, 1), // saturated
		),
	}}
	c := newBudgetCollector(f, clocktesting.NewFakePassiveClock(now))
	compareSeries(t, gathered(t, c, "gpuadmit_budget_used_hours"), map[string]float64{
		"kind=GPUBudget,name=hours,namespace=ml,resource=nvidia.com/gpu":          90,
		"kind=GPUBudget,name=hours,namespace=ml,resource=nvidia.com/gpumem":       10,
		"kind=GPUClusterBudget,name=team,namespace=,resource=nvidia.com/gpu":      24,
		"kind=GPUClusterBudget,name=team,namespace=,resource=nvidia.com/gpucores": 10,
		"kind=GPUClusterBudget,name=team,namespace=,resource=nvidia.com/gpumem":   11,
		"kind=GPUClusterBudget,name=team,namespace=,resource=example.com/fpga":    0,
		"kind=GPUClusterBudget,name=team,namespace=,resource=example.com/huge":    float64(math.MaxInt64-1) / h,
	})
	if !f.asked.Equal(now) {
		t.Errorf("standings asked at %v, want the collector's clock's %v", f.asked, now)
	}
	got := gathered(t, c, "gpuadmit_budget_hard_hours")
	if got["kind=GPUBudget,name=hours,namespace=ml,resource=nvidia.com/gpu"] != 100 {
		t.Errorf("hard hours %v", got)
	}
	got = gathered(t, c, "gpuadmit_budget_burn_rate_hours")
	if got["kind=GPUClusterBudget,name=team,namespace=,resource=nvidia.com/gpu"] != 2 {
		t.Errorf("burn rate %v", got)
	}
	compareSeries(t, gathered(t, c, "gpuadmit_budget_projected_exhaustion_timestamp_seconds"), map[string]float64{
		"kind=GPUBudget,name=hours,namespace=ml,resource=nvidia.com/gpu":     float64(now.Add(5 * time.Hour).Unix()),
		"kind=GPUClusterBudget,name=team,namespace=,resource=nvidia.com/gpu": float64(now.Add(12 * time.Hour).Unix()),
		// 1 unit-millisecond left at 1 per hour: an hour
		"kind=GPUClusterBudget,name=team,namespace=,resource=example.com/huge": float64(now.Add(time.Hour).Unix()),
	})
	got = gathered(t, c, "gpuadmit_budget_window_end_timestamp_seconds")
	if got["kind=GPUBudget,name=hours,namespace=ml,resource=nvidia.com/gpu"] != float64(monthEnd.Unix()) {
		t.Errorf("window end %v", got)
	}
}

// TestBudgetMetricsNone: no budget, no series (and no error).
func TestBudgetMetricsNone(t *testing.T) {
	c := newBudgetCollector(&fixedStandings{}, clocktesting.NewFakePassiveClock(time.Unix(0, 0)))
	if got := gathered(t, c, "gpuadmit_budget_used_hours"); len(got) != 0 {
		t.Fatalf("series without budgets: %v", got)
	}
}
