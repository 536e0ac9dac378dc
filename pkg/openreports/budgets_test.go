package openreports

import (
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// fakeBudgets are fixed standings by namespace.
type fakeBudgets map[string][]budget.Standing

func (f fakeBudgets) Standings(ns string, _ time.Time) []budget.Standing { return f[ns] }

func budgetStanding(kind, ns, name string, used, hard burn.Amount) budget.Standing {
	return budget.Standing{Kind: kind, Namespace: ns, Name: name, Window: "Monthly UTC",
		WindowEnd: time.Date(2027, 4, 1, 0, 0, 0, 0, time.UTC),
		Resources: []budget.ResourceStanding{{Resource: corev1.ResourceName("nvidia.com/gpu"), Used: used, Hard: hard}}}
}

// TestBudgetResults: each budget counting a namespace is a result per
// limited resource, naming the budget: pass within it, warn at the near
// percent, fail once spent and once overrun (saying running pods are not
// stopped); a namespace with GPU pods and a budget but no quota still
// gets its Report; a use that only grows within a percent rewrites
// nothing (the result's description and properties stay).
func TestBudgetResults(t *testing.T) {
	const h = burn.MillisPerHour
	h2 := newHarness(t, reservations{})
	for _, ns := range []string{"ml-dev", "ml-train", "ml-big", "ml-over"} {
		h2.l.UpsertNamespace(testns.New(ns, nil))
		h2.l.UpsertPod(testpod.New("p").NS(ns).UID("p-"+ns).App("c", testpod.GPU(1)).Build())
	}
	b := fakeBudgets{
		"ml-dev":   {budgetStanding("GPUBudget", "ml-dev", "hours", 79*h, 100*h)},
		"ml-train": {budgetStanding("GPUClusterBudget", "", "ml", 80*h, 100*h)},
		"ml-big":   {budgetStanding("GPUBudget", "ml-big", "hours", math.MaxInt64, math.MaxInt64)},
		"ml-over":  {budgetStanding("GPUBudget", "ml-over", "hours", 101*h, 100*h)},
	}
	h2.w.Budgets, h2.w.NearPercent = b, 80
	for _, c := range []struct{ ns, rule, result, inDescription string }{
		{"ml-dev", "GPUBudget hours: nvidia.com/gpu", "pass", "79 % of its 100 nvidia.com/gpu-hours"},
		{"ml-train", "GPUClusterBudget ml: nvidia.com/gpu", "warn", "80 %"},
		{"ml-big", "GPUBudget hours: nvidia.com/gpu", "fail", "spent"},
		{"ml-over", "GPUBudget hours: nvidia.com/gpu", "fail", "overrun by running pods"},
	} {
		r := h2.round(c.ns)
		if r == nil {
			t.Fatalf("%s: no Report (a budget counts it)", c.ns)
		}
		res, ok := results(r)[c.rule]
		if !ok || string(res.Result) != c.result || !strings.Contains(res.Description, c.inDescription) ||
			res.Subjects[0].Kind != strings.Fields(c.rule)[0] || res.Category != budgetCategory {
			t.Errorf("%s: %+v, want %s with %q", c.ns, res, c.result, c.inDescription)
		}
	}
	before := results(h2.round("ml-dev"))["GPUBudget hours: nvidia.com/gpu"]
	b["ml-dev"] = []budget.Standing{budgetStanding("GPUBudget", "ml-dev", "hours", 79*h+h/2, 100*h)}
	after := results(h2.round("ml-dev"))["GPUBudget hours: nvidia.com/gpu"]
	if before.Timestamp != after.Timestamp || before.Description != after.Description {
		t.Errorf("a use growing within 79 %% rewrote the result: %+v then %+v", before, after)
	}
}
