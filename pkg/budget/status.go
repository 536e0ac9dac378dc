package budget

import (
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// Reasons of the conditions.
const (
	ReasonEnforced    = "Enforced"
	ReasonNotEnforced = "NotEnforced"
	ReasonSpent       = "Spent"
	ReasonWithin      = "WithinBudget"
)

// statusOf is the status the elected replica writes: st's numbers, the
// checkpoint cp, the conditions carried over from read.
func (t *Tracker) statusOf(b *tracked, st Standing, cp *checkpoint, read *gpuadmitv1.BudgetStatus, generation int64, now time.Time) gpuadmitv1.BudgetStatus {
	out := gpuadmitv1.BudgetStatus{ObservedGeneration: generation, Window: st.Window,
		Conditions: append([]metav1.Condition(nil), read.Conditions...)}
	ws, we := metav1.NewTime(st.WindowStart), metav1.NewTime(st.WindowEnd)
	out.WindowStart, out.WindowEnd = &ws, &we
	var summary, spent []string
	for _, r := range st.Resources {
		rs := gpuadmitv1.BudgetResourceStatus{Resource: r.Resource, Hard: burn.AmountToQuantity(r.Hard),
			Used: burn.AmountToQuantity(r.Used), BurnRate: burn.AmountToQuantity(r.RatePerHour)}
		if at, ok := Exhaustion(st, r, now); ok {
			mt := metav1.NewTime(at)
			rs.ProjectedExhaustion = &mt
			if out.ProjectedExhaustion == nil || at.Before(out.ProjectedExhaustion.Time) {
				out.ProjectedExhaustion = &mt
			}
		}
		out.Resources = append(out.Resources, rs)
		out.Percent = max(out.Percent, Percent(r.Used, r.Hard))
		summary = append(summary, fmt.Sprintf("%s %s/%s", r.Resource, burn.AmountToHours(r.Used), burn.AmountToHours(r.Hard)))
		if r.Used >= r.Hard {
			spent = append(spent, string(r.Resource))
		}
	}
	out.Summary = strings.Join(summary, ", ")
	out.Checkpoint = t.writeCheckpoint(cp, b.window.Rolling() != 0)
	valid := metav1.Condition{Type: gpuadmitv1.ConditionBudgetValid, Status: metav1.ConditionTrue, Reason: ReasonEnforced,
		Message: "every key of spec.hard is enforced", ObservedGeneration: generation}
	if len(st.Problems) > 0 {
		valid.Status, valid.Reason, valid.Message = metav1.ConditionFalse, ReasonNotEnforced, strings.Join(st.Problems, "; ")
	}
	spentC := metav1.Condition{Type: gpuadmitv1.ConditionBudgetSpent, Status: metav1.ConditionFalse, Reason: ReasonWithin,
		Message: "within budget until " + st.WindowEnd.Format(time.RFC3339), ObservedGeneration: generation}
	if len(spent) > 0 {
		spentC.Status, spentC.Reason = metav1.ConditionTrue, ReasonSpent
		spentC.Message = fmt.Sprintf("%s spent; new pods using it are denied until %s", strings.Join(spent, ", "), st.WindowEnd.Format(time.RFC3339))
	}
	for _, c := range []metav1.Condition{valid, spentC} {
		c.LastTransitionTime = metav1.NewTime(now)
		meta.SetStatusCondition(&out.Conditions, c)
	}
	return out
}

// Percent is used/hard in percent, rounded down (100 for a zero limit:
// spent), at most math.MaxInt32.
func Percent(used, hard burn.Amount) int32 {
	if hard <= 0 {
		return 100
	}
	return int32(min(math.Floor(float64(max(used, 0))*100/float64(hard)), math.MaxInt32))
}

// Exhaustion is when r of the budget s would reach its limit at its last
// hour's burn rate from now: false when it never would within the window
// (a calendar window: before it ends; a rolling window, whose end is
// always now: within its length), when nothing burns, or when the limit is
// reached already. The status, the command line and the metrics all
// project with it.
func Exhaustion(s Standing, r ResourceStanding, now time.Time) (time.Time, bool) {
	if r.RatePerHour <= 0 || r.Used >= r.Hard {
		return time.Time{}, false
	}
	horizon := s.WindowEnd.Sub(now)
	if strings.HasPrefix(s.Window, "rolling") {
		horizon = s.WindowEnd.Sub(s.WindowStart)
	}
	hoursLeft := float64(r.Hard-r.Used) / float64(r.RatePerHour)
	if horizon <= 0 || hoursLeft > horizon.Hours() {
		return time.Time{}, false
	}
	return now.Add(time.Duration(hoursLeft * float64(time.Hour))).Truncate(time.Second), true
}
