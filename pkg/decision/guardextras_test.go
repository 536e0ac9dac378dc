package decision

import (
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// guardNow is the fake clock's time of the differential runs' budgets.
var guardNow = time.Date(2026, 12, 15, 12, 0, 0, 0, time.UTC)

// addGuardExtras gives a random cluster what the built-in rules that no
// guard list names start from (the lists input.guard.quiet summarizes),
// each sometimes: a scoped ResourceQuota (PriorityClass high, or
// BestEffort), a team quota over ns-0 and ns-1 with a per-user limit, and
// GPU-hour budgets (spent, nearly spent or fresh; sometimes with a problem).
// It returns the budgets the Decider is to hold.
func addGuardExtras(r *rand.Rand, l *ledger.Ledger) Option {
	if r.IntN(2) == 0 {
		q := testquota.New(fmt.Sprintf("ns-%d", r.IntN(3)), "scoped", map[string]string{
			"limits.nvidia.com/gpu": fmt.Sprint(1 + r.IntN(3)), "limits.nvidia.com/gpumem": fmt.Sprint([]int{8192, 40000}[r.IntN(2)])})
		if r.IntN(2) == 0 {
			q.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}}}}
		} else {
			q.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}
		l.UpsertQuota(q)
	}
	if r.IntN(2) == 0 {
		for _, ns := range []string{"ns-0", "ns-1"} {
			l.UpsertNamespace(testns.New(ns, map[string]string{"team": "t"}))
		}
		l.UpsertClusterQuota(&gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: "t"},
			Spec: gpuadmitv1.GPUClusterQuotaSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "t"}},
				Hard:    corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse(fmt.Sprint(2 + r.IntN(6)))},
				PerUser: corev1.ResourceList{"limits.nvidia.com/gpumem": resource.MustParse(fmt.Sprint([]int{20000, 60000}[r.IntN(2)]))}}})
	}
	b := &fakeBudgets{by: map[string][]budget.Standing{}}
	for i := range 3 {
		if r.IntN(2) == 0 {
			continue
		}
		ns := fmt.Sprintf("ns-%d", i)
		hard := burn.Amount(1+r.IntN(4)) * hour
		used := []burn.Amount{0, hard / 2, hard - hour/10, hard, hard + hour}[r.IntN(5)]
		s := budget.Standing{Kind: []string{budget.KindBudget, budget.KindClusterBudget}[r.IntN(2)], Namespace: ns, Name: "hours",
			Window: "Monthly UTC", WindowStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), WindowEnd: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC),
			Resources: []budget.ResourceStanding{{Resource: "nvidia.com/gpu", Family: "nvidia", Dimension: "gpu", Hard: hard, Used: used}}}
		if r.IntN(4) == 0 {
			s.Problems = []string{`spec.hard "example.com/tpu" names no governed resource`}
		}
		b.by[ns] = append(b.by[ns], s)
	}
	return WithBudgets(b, clocktesting.NewFakeClock(guardNow))
}

// guardRequest completes req for the random cluster: the team quotas that
// count its namespace (with their members), a charged user, and sometimes
// a priority class or a deadline for the scoped quota and the budgets.
func guardRequest(r *rand.Rand, d *Decider, req Request) Request {
	ns := req.Pod.Namespace
	l := d.snap.(*ledger.Ledger)
	for _, q := range l.TeamsOf(ns) {
		req.Teams = append(req.Teams, Team{Quota: q, Members: l.Selected(q.Name)})
	}
	req.ChargedUser = []string{"alice", "bob"}[r.IntN(2)]
	if r.IntN(3) == 0 {
		req.Pod.Spec.PriorityClassName = "high"
	}
	if r.IntN(3) == 0 {
		req.Pod.Spec.ActiveDeadlineSeconds = ptr.To([]int64{60, 3600, 36000}[r.IntN(3)])
	}
	return req
}
