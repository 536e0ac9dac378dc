package budget

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// Reasons of the budgets' Events.
const (
	EventThreshold = "BudgetThreshold"
	EventSpent     = "BudgetSpent"
	EventOverrun   = "BudgetOverrun"
)

// events records the Warning Events of a checkpoint: each warn threshold
// its use first reaches in the window, Spent when it becomes spent, and
// BudgetOverrun when running pods take a resource past its limit. The
// status before (prev) says what was already reported in the window, so
// a change of leader reports nothing twice.
func (c *Checkpointer) events(obj runtime.Object, prev *gpuadmitv1.BudgetStatus, st Standing) {
	if c.o.Recorder == nil {
		return
	}
	sameWindow := isRollingStanding(st) || (prev.WindowStart != nil && prev.WindowStart.Time.Equal(st.WindowStart))
	var before int32
	prevUsed := map[string]bool{}
	if sameWindow {
		before = prev.Percent
		for _, r := range prev.Resources {
			h, u := r.Hard.MilliValue(), r.Used.MilliValue()
			prevUsed[string(r.Resource)] = u > h
		}
	}
	var now int32
	for _, r := range st.Resources {
		now = max(now, Percent(r.Used, r.Hard))
		if r.Used > r.Hard && !prevUsed[string(r.Resource)] && r.Hard > 0 {
			c.o.Recorder.Eventf(obj, "Warning", EventOverrun, "running pods took %s past its limit: %s of %s hours used in the window ending %s (admission only: running pods are not stopped)",
				r.Resource, burn.AmountToHours(r.Used), burn.AmountToHours(r.Hard), st.WindowEnd.Format(time.RFC3339))
		}
	}
	for _, p := range slices.Sorted(slices.Values(c.o.WarnPercents)) {
		if before < p && now >= p {
			c.o.Recorder.Eventf(obj, "Warning", EventThreshold, "%d%% of the budget used in the window ending %s", p, st.WindowEnd.Format(time.RFC3339))
		}
	}
	wasSpent := sameWindow && meta.IsStatusConditionTrue(prev.Conditions, gpuadmitv1.ConditionBudgetSpent)
	if spent := spentOf(st); len(spent) > 0 && !wasSpent {
		c.o.Recorder.Eventf(obj, "Warning", EventSpent, "%s spent: new pods using it are denied until %s", fmt.Sprint(spent), st.WindowEnd.Format(time.RFC3339))
	}
}

func spentOf(st Standing) []string {
	var out []string
	for _, r := range st.Resources {
		if r.Used >= r.Hard {
			out = append(out, string(r.Resource))
		}
	}
	return out
}

// isRollingStanding: a rolling window's start moves with every
// checkpoint; its thresholds are reported on each crossing from below.
func isRollingStanding(st Standing) bool { return len(st.Window) > 8 && st.Window[:8] == "rolling " }
