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
	if sameWindow {
		before = prev.Percent
	}
	c.overruns(obj, prev, st, sameWindow)
	var now int32
	for _, r := range st.Resources {
		now = max(now, Percent(r.Used, r.Hard))
	}
	for _, p := range slices.Sorted(slices.Values(c.o.WarnPercents)) {
		if int64(before) < p && int64(now) >= p {
			c.o.Recorder.Eventf(obj, "Warning", EventThreshold, "%d%% of the budget used in the window ending %s", p, st.WindowEnd.Format(time.RFC3339))
		}
	}
	wasSpent := sameWindow && meta.IsStatusConditionTrue(prev.Conditions, gpuadmitv1.ConditionBudgetSpent)
	if spent := spentOf(st); len(spent) > 0 && !wasSpent {
		c.o.Recorder.Eventf(obj, "Warning", EventSpent, "%s spent: new pods using it are denied until %s", fmt.Sprint(spent), st.WindowEnd.Format(time.RFC3339))
	}
}

// overruns records BudgetOverrun for each resource running pods took past
// its limit since the status before.
func (c *Checkpointer) overruns(obj runtime.Object, prev *gpuadmitv1.BudgetStatus, st Standing, sameWindow bool) {
	over := map[string]bool{}
	if sameWindow {
		for _, r := range prev.Resources {
			over[string(r.Resource)] = r.Used.Cmp(r.Hard) > 0
		}
	}
	for _, r := range st.Resources {
		if r.Used > r.Hard && r.Hard > 0 && !over[string(r.Resource)] {
			c.o.Recorder.Eventf(obj, "Warning", EventOverrun, "running pods took %s past its limit: %s of %s hours used in the window ending %s (admission only: running pods are not stopped)",
				r.Resource, burn.AmountToHours(r.Used), burn.AmountToHours(r.Hard), st.WindowEnd.Format(time.RFC3339))
		}
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
