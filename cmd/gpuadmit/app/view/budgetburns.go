package view

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// PodBurn is what one pod burned in a budget's current window, as the
// budget counts it (from its folded entry, when it has one), per limited
// resource: hours (as the status writes them) and unit-milliseconds.
type PodBurn struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	User      string `json:"user,omitempty"`
	// Deleted: the pod is gone, its burn not yet folded into the
	// budget's checkpoint.
	Deleted    bool              `json:"deleted,omitempty"`
	Burn       map[string]string `json:"burn"`
	BurnUnitMs map[string]int64  `json:"burnUnitMilliseconds"`
}

// UserBurn is what the pods charged to one user burned in a budget's
// window, per limited resource.
type UserBurn struct {
	User       string            `json:"user"`
	Pods       int               `json:"pods"`
	Burn       map[string]string `json:"burn"`
	BurnUnitMs map[string]int64  `json:"burnUnitMilliseconds"`
}

// WithBurns fills each budget of bs with what each pod and each user of
// the namespaces shown burned in it at now (largest first), as the
// budget counts them.
func (v View) WithBurns(bs []Budget, now time.Time) {
	if v.tracker == nil {
		return
	}
	byKey := map[string]int{}
	for i := range bs {
		byKey[refKey(budget.Ref{Kind: bs[i].Kind, Namespace: bs[i].Namespace, Name: bs[i].Name})] = i
	}
	for _, ns := range v.burningNamespaces(bs) {
		for _, pb := range v.tracker.PodBurns(ns, now) {
			i, ok := byKey[refKey(pb.Budget)]
			if !ok {
				continue
			}
			p := PodBurn{Namespace: ns, Name: pb.Name, User: pb.User, Deleted: pb.Deleted}
			p.BurnUnitMs = amountsOf(bs[i], pb.Amounts)
			p.Burn = hoursOf(p.BurnUnitMs)
			bs[i].Pods = append(bs[i].Pods, p)
		}
	}
	for i := range bs {
		sortBurns(bs[i].Pods, bs[i].Resources)
		bs[i].Users = usersOf(bs[i].Pods, bs[i].Resources)
	}
}

// burningNamespaces are the namespaces whose pods count in bs: the one
// shown, else each GPUBudget's and those each GPUClusterBudget selects.
func (v View) burningNamespaces(bs []Budget) []string {
	if v.Ns != "" {
		return []string{v.Ns}
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.Namespaces...)
		if b.Namespace != "" {
			out = append(out, b.Namespace)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func refKey(r budget.Ref) string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// amountsOf are a by b's limited resources (those a burns).
func amountsOf(b Budget, a burn.Amounts) map[string]int64 {
	out := map[string]int64{}
	for _, r := range b.Resources {
		for k, v := range a {
			if k.Family == r.family && k.Dimension.String() == r.dimension && v > 0 {
				out[r.Resource] = int64(v)
			}
		}
	}
	return out
}

func hoursOf(ms map[string]int64) map[string]string {
	out := make(map[string]string, len(ms))
	for r, v := range ms {
		out[r] = Hours(burn.Amount(v))
	}
	return out
}

// sortBurns orders pods by their burn of the budget's first resource,
// then the others, largest first, then by namespace and name.
func sortBurns(pods []PodBurn, rs []BudgetResource) {
	slices.SortStableFunc(pods, func(a, b PodBurn) int {
		for _, r := range rs {
			if c := cmp.Compare(b.BurnUnitMs[r.Resource], a.BurnUnitMs[r.Resource]); c != 0 {
				return c
			}
		}
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
}

// usersOf sums pods by user (saturating), largest first.
func usersOf(pods []PodBurn, rs []BudgetResource) []UserBurn {
	by := map[string]*UserBurn{}
	for _, p := range pods {
		u := by[p.User]
		if u == nil {
			u = &UserBurn{User: p.User, BurnUnitMs: map[string]int64{}}
			by[p.User] = u
		}
		u.Pods++
		for r, v := range p.BurnUnitMs {
			u.BurnUnitMs[r] = int64(burn.Amount(u.BurnUnitMs[r]).Plus(burn.Amount(v)))
		}
	}
	out := make([]UserBurn, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		u := *by[name]
		u.Burn = hoursOf(u.BurnUnitMs)
		out = append(out, u)
	}
	slices.SortStableFunc(out, func(a, b UserBurn) int {
		for _, r := range rs {
			if c := cmp.Compare(b.BurnUnitMs[r.Resource], a.BurnUnitMs[r.Resource]); c != 0 {
				return c
			}
		}
		return 0
	})
	if len(out) == 0 {
		return nil
	}
	return out
}
