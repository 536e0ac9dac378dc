package openreports

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"time"

	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// budgetCategory is the category of a GPU-hour budget's results.
const budgetCategory = "GPU-hour budget"

// resultWarn is a budget near its limit (the CRD's enum).
const resultWarn reportsv1alpha1.Result = "warn"

// Budgets are the standings of the GPU-hour budgets that count a
// namespace (*budget.Tracker).
type Budgets interface {
	Standings(namespace string, now time.Time) []budget.Standing
}

// defaultNearPercent is the lowest warning threshold when none is set
// (budgets.warnPercents' default is [80, 95]).
const defaultNearPercent = 80

// budgetResults are the results of the budgets that count ns, a result
// per limited resource: its rule "GPUBudget NAME: RESOURCE" (or
// GPUClusterBudget), its subject the budget; pass within it, warn at or
// past near percent, fail once spent (admission denies new pods) or
// overrun (running pods went past it). The description and properties
// change only with the percent, so a running pod does not rewrite the
// Report at every round.
func budgetResults(ns string, b Budgets, near int64, now time.Time) []reportsv1alpha1.ReportResult {
	if b == nil {
		return nil
	}
	if near <= 0 {
		near = defaultNearPercent
	}
	var out []reportsv1alpha1.ReportResult
	for _, s := range b.Standings(ns, now) {
		subject := corev1.ObjectReference{APIVersion: gpuadmitv1.GroupVersion().String(), Kind: s.Kind, Namespace: s.Namespace, Name: s.Name}
		for _, r := range s.Resources {
			out = append(out, budgetResult(s, r, subject, near, now))
		}
	}
	return out
}

func budgetResult(s budget.Standing, r budget.ResourceStanding, subject corev1.ObjectReference, near int64, now time.Time) reportsv1alpha1.ReportResult {
	pct := budget.Percent(r.Used, r.Hard)
	hard := burn.AmountToHours(r.Hard)
	out := reportsv1alpha1.ReportResult{
		Source: Source, Policy: Policy, Rule: s.Kind + " " + s.Name + ": " + string(r.Resource), Category: budgetCategory,
		Timestamp: metav1.Timestamp{Seconds: now.Unix()}, Result: resultPass, Severity: severityInfo,
		Subjects: []corev1.ObjectReference{subject},
		Description: fmt.Sprintf("%s %s: %d %% of its %s %s-hours used in the window %s ending %s", s.Kind, s.Name, pct, hard, r.Resource,
			s.Window, s.WindowEnd.Format(time.RFC3339)),
		Properties: map[string]string{"percent": strconv.FormatInt(int64(pct), 10), "hard": hard, "window": s.Window,
			"windowEnd": s.WindowEnd.Format(time.RFC3339)},
	}
	switch {
	case r.Used > r.Hard:
		out.Result, out.Severity = resultFail, severityHigh
		out.Description += ": overrun by running pods (admission never stops them); new pods using it are denied until the window ends"
	case r.Used == r.Hard:
		out.Result, out.Severity = resultFail, severityHigh
		out.Description += ": spent; new pods using it are denied until the window ends"
	case atLeastPercent(r.Used, r.Hard, near):
		out.Result, out.Severity = resultWarn, severityMedium
	}
	return out
}

// atLeastPercent reports whether used is at least p percent of hard,
// exactly (used*100 >= hard*p without overflow; both non-negative).
func atLeastPercent(used, hard burn.Amount, p int64) bool {
	if used < 0 || hard < 0 || p <= 0 || p > math.MaxInt32 {
		return used >= hard
	}
	uh, ul := bits.Mul64(uint64(used), 100)
	hh, hl := bits.Mul64(uint64(hard), uint64(p))
	return uh > hh || (uh == hh && ul >= hl)
}
