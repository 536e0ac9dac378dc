package view

import (
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// The budgets' standings as their status says them: the use written by
// the elected replica at its last checkpoint (Budget.AsOf is the
// checkpoint's time), the limits from the spec. A budget never
// checkpointed shows no use as of no time; one whose status describes a
// window that has ended says so (Problems).

// statusStandings are the standings of the budgets of bs that count
// namespace ns ("" : every budget), with the moment each is as of.
func statusStandings(bs *clusterstate.Budgets, l *ledger.Ledger, ns string, now time.Time) ([]budget.Standing, []time.Time, [][]string) {
	if bs.Empty() {
		return nil, nil, nil
	}
	var out []budget.Standing
	var asOf []time.Time
	var members [][]string
	for _, b := range bs.Namespaced {
		if ns != "" && b.Namespace != ns {
			continue
		}
		s, at := standingOf(budget.KindBudget, b.Namespace, b.Name, b.Spec.Window, b.Spec.Hard, b.Status, now)
		out, asOf, members = append(out, s), append(asOf, at), append(members, nil)
	}
	for _, b := range bs.Cluster {
		sel := selectedBy(b, l)
		if ns != "" && !slices.Contains(sel, ns) {
			continue
		}
		s, at := standingOf(budget.KindClusterBudget, "", b.Name, b.Spec.Window, b.Spec.Hard, b.Status, now)
		if sel == nil {
			sel = []string{}
		}
		out, asOf, members = append(out, s), append(asOf, at), append(members, sel)
	}
	return out, asOf, members
}

// standingOf is a budget's standing as its status says it, and the time
// it is as of (zero: never checkpointed).
func standingOf(kind, ns, name string, w gpuadmitv1.BudgetWindow, hard corev1.ResourceList, st gpuadmitv1.BudgetStatus,
	now time.Time) (budget.Standing, time.Time) {
	s := budget.Standing{Kind: kind, Namespace: ns, Name: name, Window: st.Window}
	if s.Window == "" {
		s.Window = describeWindow(w)
	}
	if st.WindowStart != nil {
		s.WindowStart = st.WindowStart.Time
	}
	if st.WindowEnd != nil {
		s.WindowEnd = st.WindowEnd.Time
	}
	used := map[corev1.ResourceName]gpuadmitv1.BudgetResourceStatus{}
	for _, r := range st.Resources {
		used[r.Resource] = r
	}
	for _, key := range slices.Sorted(maps.Keys(hard)) {
		h, err := burn.HoursToAmount(hard[key])
		if err != nil {
			s.Problems = append(s.Problems, fmt.Sprintf("spec.hard[%s]: %v", key, err))
			continue
		}
		r := budget.ResourceStanding{Resource: key, Hard: h}
		if u, ok := used[key]; ok {
			r.Used, _ = burn.HoursToAmount(u.Used)
			r.RatePerHour, _ = burn.HoursToAmount(u.BurnRate)
		}
		s.Resources = append(s.Resources, r)
	}
	for _, c := range st.Conditions {
		if c.Type == gpuadmitv1.ConditionBudgetValid && c.Status == metav1.ConditionFalse {
			s.Problems = append(s.Problems, c.Message)
		}
	}
	var at time.Time
	if st.Checkpoint != nil {
		at = st.Checkpoint.Time.Time
	}
	if !s.WindowEnd.IsZero() && !now.Before(s.WindowEnd) {
		s.Problems = append(s.Problems, fmt.Sprintf("the status is of the window that ended at %s: no checkpoint of the current window yet",
			s.WindowEnd.Format(time.RFC3339)))
	}
	return s, at
}

// describeWindow is w as the status describes it.
func describeWindow(w gpuadmitv1.BudgetWindow) string {
	if w.Rolling != nil {
		return "rolling " + w.Rolling.Duration.String()
	}
	zone := w.TimeZone
	if zone == "" {
		zone = "UTC"
	}
	return w.Calendar + " " + zone
}

// selectedBy are the namespaces of l that b selects (by name, or by
// labels when the state has the namespace), sorted.
func selectedBy(b *gpuadmitv1.GPUClusterBudget, l *ledger.Ledger) []string {
	var sel labels.Selector
	if b.Spec.NamespaceSelector != nil {
		if s, err := metav1.LabelSelectorAsSelector(b.Spec.NamespaceSelector); err == nil {
			sel = s
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, n := range b.Spec.Namespaces {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if sel != nil && l != nil {
		for name, ns := range l.Snapshot(nil).Namespaces {
			if !seen[name] && ns.LabelsKnown && sel.Matches(labels.Set(ns.Labels)) {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}
