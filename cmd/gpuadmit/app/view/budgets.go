package view

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"time"

	configv1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// The states of a budget shown (Budget.State): within it, near it (its
// use at or past the lowest warning threshold), spent (a resource's use
// reached its limit: admission denies new pods that burn it) or overrun
// (past its limit: running pods went on burning, which admission never
// stops).
const (
	BudgetOK      = "ok"
	BudgetNear    = "near"
	BudgetSpent   = "spent"
	BudgetOverrun = "overrun"
)

// DefaultNearPercent is the lowest warning threshold when the
// configuration has no budgets section (budgets.warnPercents' default is
// [80, 95]).
const DefaultNearPercent = 80

// NearPercentOf is the lowest of cfg's warnPercents: a budget at or past
// it is near its limit. With warnPercents [] (never warn) a budget is
// never near, only spent or overrun.
func NearPercentOf(cfg *configv1.Budgets) int64 {
	if cfg == nil || cfg.WarnPercents == nil {
		return DefaultNearPercent
	}
	if len(cfg.WarnPercents) == 0 {
		return 101
	}
	return slices.Min(cfg.WarnPercents)
}

// Budget is one GPU-hour budget as the reports show it (usage, top,
// audit): its window, each limited resource's use in it, and its state.
type Budget struct {
	Kind string `json:"kind"`
	// Namespace is a GPUBudget's; Namespaces the namespaces of the state
	// a GPUClusterBudget selects.
	Namespace  string   `json:"namespace,omitempty"`
	Name       string   `json:"name"`
	Namespaces []string `json:"namespaces,omitempty"`
	Window     string   `json:"window"`
	// WindowStart and WindowEnd bound the current window.
	WindowStart *time.Time `json:"windowStart,omitempty"`
	WindowEnd   *time.Time `json:"windowEnd,omitempty"`
	// AsOf is the moment the use is computed at.
	AsOf time.Time `json:"asOf"`
	// Percent is the highest use of a resource, in percent of its limit
	// (floored; 100 for a limit of 0), as the status's.
	Percent   int64            `json:"percent"`
	State     string           `json:"state"`
	Resources []BudgetResource `json:"resources"`
	// Problems are the keys of spec.hard (or the window) not enforced.
	Problems []string `json:"problems,omitempty"`
	// Pods and Users are what each pod and each user of the namespaces
	// shown burned in the window (top only: WithBurns).
	Pods  []PodBurn  `json:"pods,omitempty"`
	Users []UserBurn `json:"users,omitempty"`
}

// BudgetResource is one limited resource of a budget: its limit, use and
// what is left in resource-hours (decimal strings, as the status writes
// them) and in unit-milliseconds (exact), its percent and its burn rate.
type BudgetResource struct {
	Resource   string `json:"resource"`
	Hard       string `json:"hard"`
	Used       string `json:"used"`
	Left       string `json:"left"`
	HardUnitMs int64  `json:"hardUnitMilliseconds"`
	UsedUnitMs int64  `json:"usedUnitMilliseconds"`
	Percent    int64  `json:"percent"`
	BurnRate   string `json:"burnRate"`
	BurnRateMs int64  `json:"burnRateUnitMillisecondsPerHour"`
	State      string `json:"state"`
	WhatIf     bool   `json:"whatIf,omitempty"`
	// ProjectedExhaustion is when the burn rate would reach the limit,
	// when that is before the window ends.
	ProjectedExhaustion *time.Time `json:"projectedExhaustion,omitempty"`
	// family and dimension say which part of a charge burns it.
	family, dimension string
}

// Key names the budget: GPUBudget ns/name or GPUClusterBudget name.
func (b Budget) Key() string {
	if b.Namespace == "" {
		return b.Kind + " " + b.Name
	}
	return b.Kind + " " + b.Namespace + "/" + b.Name
}

// BudgetOf is s as shown at asOf, near at nearPercent.
func BudgetOf(s budget.Standing, asOf time.Time, nearPercent int64) Budget {
	b := Budget{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Window: s.Window, AsOf: asOf,
		Resources: []BudgetResource{}, Problems: s.Problems}
	if !s.WindowStart.IsZero() {
		b.WindowStart = &s.WindowStart
	}
	if !s.WindowEnd.IsZero() {
		b.WindowEnd = &s.WindowEnd
	}
	for _, r := range s.Resources {
		br := resourceOf(s, r, asOf, nearPercent)
		b.Resources = append(b.Resources, br)
		b.Percent = max(b.Percent, br.Percent)
		b.State = worse(b.State, br.State)
	}
	if b.State == "" {
		b.State = BudgetOK
	}
	return b
}

// resourceOf is r of the budget s shown at asOf.
func resourceOf(s budget.Standing, r budget.ResourceStanding, asOf time.Time, nearPercent int64) BudgetResource {
	left := burn.Amount(0)
	if r.Used < r.Hard {
		left = r.Hard - r.Used
	}
	br := BudgetResource{Resource: string(r.Resource), Hard: Hours(r.Hard), Used: Hours(r.Used), Left: Hours(left),
		HardUnitMs: int64(r.Hard), UsedUnitMs: int64(r.Used), Percent: int64(budget.Percent(r.Used, r.Hard)),
		BurnRate: Hours(r.RatePerHour), BurnRateMs: int64(r.RatePerHour), State: StateOf(r.Used, r.Hard, nearPercent),
		family: r.Family, dimension: r.Dimension}
	if at, ok := Exhaustion(s, r, asOf); ok {
		br.ProjectedExhaustion = &at
	}
	return br
}

// StateOf is the state of a use of used against hard: exact, with no
// overflow.
func StateOf(used, hard burn.Amount, nearPercent int64) string {
	switch {
	case used > hard:
		return BudgetOverrun
	case used == hard:
		return BudgetSpent
	case atLeastPercent(used, hard, nearPercent):
		return BudgetNear
	}
	return BudgetOK
}

// atLeastPercent reports whether used*100 >= hard*p, exactly (both
// non-negative; p in 1..100).
func atLeastPercent(used, hard burn.Amount, p int64) bool {
	if used < 0 || hard < 0 || p <= 0 {
		return used >= hard
	}
	uh, ul := bits.Mul64(uint64(used), 100)
	hh, hl := bits.Mul64(uint64(hard), uint64(p))
	return uh > hh || (uh == hh && ul >= hl)
}

// worse is the worse of two states.
func worse(a, b string) string {
	rank := func(s string) int {
		return slices.Index([]string{"", BudgetOK, BudgetNear, BudgetSpent, BudgetOverrun}, s)
	}
	if rank(b) > rank(a) {
		return b
	}
	return a
}

// Exhaustion is when r of the budget s would reach its limit at its
// burn rate from asOf: false when it never would within the window (a
// calendar window: before it ends; a rolling window, whose end is always
// now: within its length), when nothing burns, or when the limit is
// reached already. (pkg/metrics projects the same for its gauge.)
func Exhaustion(s budget.Standing, r budget.ResourceStanding, asOf time.Time) (time.Time, bool) {
	return budget.Exhaustion(s, r, asOf)
}

// Hours is a in resource-hours, as the status writes it: a decimal
// with up to 2 places, truncated (what is used never reads as more than
// it is, what is left never as more room than there is).
func Hours(a burn.Amount) string { return burn.AmountToHours(a) }

// SortBudgets orders bs: GPUBudgets by namespace and name, then the
// GPUClusterBudgets by name.
func SortBudgets(bs []Budget) {
	slices.SortFunc(bs, func(a, b Budget) int {
		return cmp.Or(strings.Compare(a.Kind, b.Kind), strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
}

// Budgets are the GPU-hour budgets of the state that count the namespace
// shown (every budget when every namespace is), sorted, at now: tracked
// as a replica tracks them (pkg/budget), from each budget's checkpoint
// and the pods' own timestamps, so the numbers are the webhook's.
func (v View) Budgets(now time.Time) []Budget {
	if v.tracker == nil {
		return nil
	}
	var ss []budget.Standing
	if v.Ns == "" {
		ss = v.tracker.All(now)
	} else {
		ss = v.tracker.Standings(v.Ns, now)
	}
	out := make([]Budget, 0, len(ss))
	for _, s := range ss {
		b := BudgetOf(s, now, v.NearPercent)
		if s.Kind == budget.KindClusterBudget {
			b.Namespaces = v.selectedBy(s.Name)
			if v.scoped {
				b.Problems = append(b.Problems, fmt.Sprintf("only the pods of namespace %s were read: the burn of its other namespaces "+
					"since the last checkpoint is not counted (-A counts them)", v.Ns))
			}
		}
		out = append(out, b)
	}
	SortBudgets(out)
	return out
}
