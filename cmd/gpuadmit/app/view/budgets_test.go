package view

import (
	"math"
	"testing"
	"time"

	configv1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// TestStateOf: the state is exact at the edges and with values whose
// percent would overflow an int64 (never near when under the threshold,
// never ok at or past it).
func TestStateOf(t *testing.T) {
	const top = burn.Amount(math.MaxInt64)
	for _, c := range []struct {
		used, hard burn.Amount
		want       string
	}{
		{0, 0, BudgetSpent},
		{1, 0, BudgetOverrun},
		{79, 100, BudgetOK},
		{80, 100, BudgetNear},
		{99, 100, BudgetNear},
		{100, 100, BudgetSpent},
		{101, 100, BudgetOverrun},
		{(top/100 + 1) * 80, top, BudgetNear}, // just over 80 % of the largest: used*100 overflows an int64
		{top / 100 * 80, top, BudgetOK},       // just under 80 %
		{top - 1, top, BudgetNear},
		{top, top, BudgetSpent},
	} {
		if got := StateOf(c.used, c.hard, 80); got != c.want {
			t.Errorf("StateOf(%d, %d) = %s, want %s", c.used, c.hard, got, c.want)
		}
	}
}

// TestExhaustion: projected before a calendar window's end only, within a
// rolling window's length, never without a burn or once spent.
func TestExhaustion(t *testing.T) {
	now := time.Date(2027, 3, 31, 20, 0, 0, 0, time.UTC)
	month := budget.Standing{Window: "Monthly UTC", WindowStart: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), WindowEnd: time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC)}
	rolling := budget.Standing{Window: "rolling 24h0m0s", WindowStart: now.Add(-24 * time.Hour), WindowEnd: now}
	h := burn.Amount(burn.MillisPerHour)
	for _, c := range []struct {
		name string
		s    budget.Standing
		r    budget.ResourceStanding
		want time.Duration // -1: none
	}{
		{"3 h left at 1/h, 4 h to the month's end", month, budget.ResourceStanding{Hard: 10 * h, Used: 7 * h, RatePerHour: h}, 3 * time.Hour},
		{"5 h left, 4 h to the end: never", month, budget.ResourceStanding{Hard: 10 * h, Used: 5 * h, RatePerHour: h}, -1},
		{"rolling: 12 h within 24 h", rolling, budget.ResourceStanding{Hard: 24 * h, Used: 12 * h, RatePerHour: h}, 12 * time.Hour},
		{"rolling: 30 h beyond 24 h", rolling, budget.ResourceStanding{Hard: 40 * h, Used: 10 * h, RatePerHour: h}, -1},
		{"nothing burns", month, budget.ResourceStanding{Hard: 10 * h, Used: 9 * h}, -1},
		{"spent", month, budget.ResourceStanding{Hard: 10 * h, Used: 10 * h, RatePerHour: h}, -1},
	} {
		at, ok := Exhaustion(c.s, c.r, now)
		switch {
		case c.want < 0 && ok:
			t.Errorf("%s: projected at %v, want none", c.name, at)
		case c.want >= 0 && (!ok || !at.Equal(now.Add(c.want))):
			t.Errorf("%s: %v %v, want %v", c.name, at, ok, now.Add(c.want))
		}
	}
}

// TestNearPercentOf: near is the lowest configured threshold; with none
// configured ([]) a budget is never near, only spent or overrun.
func TestNearPercentOf(t *testing.T) {
	for _, c := range []struct {
		cfg  *configv1.Budgets
		want int64
	}{
		{nil, 80},
		{&configv1.Budgets{}, 80},
		{&configv1.Budgets{WarnPercents: []int64{95, 50}}, 50},
		{&configv1.Budgets{WarnPercents: []int64{}}, 101},
	} {
		if got := NearPercentOf(c.cfg); got != c.want {
			t.Errorf("NearPercentOf(%+v) = %d, want %d", c.cfg, got, c.want)
		}
	}
	if got := StateOf(99, 100, NearPercentOf(&configv1.Budgets{WarnPercents: []int64{}})); got != BudgetOK {
		t.Errorf("99 of 100 without thresholds: %s, want ok", got)
	}
}
