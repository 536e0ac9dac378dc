package budget

import (
	"cmp"
	"slices"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// Standings returns the standing at now of every budget that counts the
// pods of namespace (its GPUBudgets and the GPUClusterBudgets selecting
// it), sorted by kind, then name: what admission decides against. Each
// is this replica's view: the checkpoint last seen plus the burn of the
// pods it holds (its tombstones included).
func (t *Tracker) Standings(namespace string, now time.Time) []Standing {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []Standing
	for _, b := range t.budgets {
		if t.selectsLocked(b, namespace) {
			out = append(out, t.standingOf(b, t.accrueLocked(b, &b.cp, now)))
		}
	}
	sortStandings(out)
	return out
}

// All returns the standing at now of every budget, sorted by kind,
// namespace, then name.
func (t *Tracker) All(now time.Time) []Standing {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Standing, 0, len(t.budgets))
	for _, b := range t.budgets {
		out = append(out, t.standingOf(b, t.accrueLocked(b, &b.cp, now)))
	}
	sortStandings(out)
	return out
}

// Refs lists the budgets the tracker holds, sorted.
func (t *Tracker) Refs() []Ref {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Ref, 0, len(t.budgets))
	for r := range t.budgets {
		out = append(out, r)
	}
	slices.SortFunc(out, compareRefs)
	return out
}

func compareRefs(a, b Ref) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func sortStandings(s []Standing) {
	slices.SortFunc(s, func(a, b Standing) int {
		return compareRefs(Ref{a.Kind, a.Namespace, a.Name}, Ref{b.Kind, b.Namespace, b.Name})
	})
}

// standingOf is b's standing for accrual a.
func (t *Tracker) standingOf(b *tracked, a accrual) Standing {
	st := Standing{Kind: b.ref.Kind, Namespace: b.ref.Namespace, Name: b.ref.Name, Window: b.window.String(),
		WindowStart: a.start, WindowEnd: a.end, Problems: slices.Clone(b.problems)}
	used := a.used()
	for _, r := range b.resources {
		st.Resources = append(st.Resources, ResourceStanding{Resource: r.name, Family: r.key.Family,
			Dimension: r.key.Dimension.String(), Hard: r.hard, Used: used[r.key], RatePerHour: a.lastHour[r.key]})
	}
	return st
}

// PodBurns lists what each pod of namespace burned in the current window
// of each budget counting it, as that budget counts it (from the pod's
// foldedPods entry), sorted by budget, then pod name: the views' per-pod
// and per-user numbers. Pods whose burn in a window is zero are left out.
func (t *Tracker) PodBurns(namespace string, now time.Time) []PodBurn {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []PodBurn
	for _, b := range t.budgets {
		if !t.selectsLocked(b, namespace) {
			continue
		}
		start, _ := b.window.At(now)
		for _, e := range t.byNS[namespace] {
			from := maxTime(start, b.cp.foldedPods[e.uid])
			amounts := e.timeline.Between(from, now)
			if len(amounts) == 0 {
				continue
			}
			out = append(out, PodBurn{Budget: b.ref, Name: e.name, UID: e.uid, User: e.user, Deleted: e.deleted(),
				Amounts: burn.Amounts{}.Add(amounts)})
		}
	}
	slices.SortFunc(out, func(a, b PodBurn) int {
		return cmp.Or(compareRefs(a.Budget, b.Budget), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
	})
	return out
}
