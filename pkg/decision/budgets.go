package decision

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// A GPU-hour budget (GPUBudget, GPUClusterBudget) limits what the pods of
// a namespace (or a team's namespaces) burn over a window. Admission reads
// where each budget of the request's namespace stands now (Budgets, at the
// decider's clock) and hands the policies one entry per budget and
// resource the pod or claim burns (input.budgets): a pod is denied once the
// budget is spent, or when its activeDeadlineSeconds lets it burn past what
// is left; warnings at the configured thresholds. Running pods are never
// stopped: only admission holds a budget.

// Budgets tells where the budgets counting a namespace stand at a moment;
// *budget.Tracker satisfies it.
type Budgets interface {
	Standings(namespace string, now time.Time) []budget.Standing
}

// Option configures a Decider.
type Option func(*Decider)

// WithBudgets makes the Decider hold the GPU-hour budgets b reports,
// at clk's now (nil clk: the real clock); a nil b holds none.
func WithBudgets(b Budgets, clk clock.PassiveClock) Option {
	return func(d *Decider) {
		d.budgets = b
		if clk == nil {
			clk = clock.RealClock{}
		}
		d.clock = clk
	}
}

// KindBudget and KindClusterBudget are BudgetCheck.Kind.
const (
	KindBudget        = budget.KindBudget
	KindClusterBudget = budget.KindClusterBudget
)

// BudgetCheck is one budget's resource against what the pod or claim
// burns of it. Amounts are unit-milliseconds (burn.Amount): device-ms,
// MiB-ms or core-percent-ms.
type BudgetCheck struct {
	Kind string `json:"kind"`
	// Namespace is a GPUBudget's ("" for a GPUClusterBudget).
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	Resource  string    `json:"resource"`
	Window    string    `json:"window"`
	WindowEnd time.Time `json:"windowEnd"`
	Hard      int64     `json:"hard"`
	Used      int64     `json:"used"`
	// Demand is the pod's (or claim's) full charge of the resource (an
	// amount per millisecond of burn).
	Demand int64 `json:"demand"`
	// MaxBurn is the most the pod can burn (activeDeadlineSeconds x
	// Demand); -1 without a deadline.
	MaxBurn int64 `json:"maxBurn"`
	// Spent: Used >= Hard. OverDeadline: not spent, but MaxBurn passes
	// what is left.
	Spent        bool `json:"spent,omitempty"`
	OverDeadline bool `json:"overDeadline,omitempty"`
}

// Exceeded reports whether the check denies its pod.
func (c *BudgetCheck) Exceeded() bool { return c.Spent || c.OverDeadline }

// budgetEntry is one entry of input.budgets.
type budgetEntry struct {
	BudgetCheck
	rolling               bool
	percent, warnPercent  int64
	activeDeadlineSeconds int64
	hardH, usedH, leftH   string
	maxBurnH              string
}

// budgetProblem is one entry of input.budgetProblems: a key or window of
// a budget counting the namespace that cannot be enforced.
type budgetProblem struct {
	kind, namespace, name, problem string
}

// budgetChecks lists the budgets of ns against the demand eff of the pod
// (deadline: its activeDeadlineSeconds, -1 for none or a claim): one entry
// per budget and resource the request burns, budget by budget
// (GPUBudgets, then GPUClusterBudgets, by name), and the budgets' problems.
func (d *Decider) budgetChecks(ns string, eff effective.Usage, deadline int64) ([]budgetEntry, []budgetProblem) {
	if d.budgets == nil {
		return nil, nil
	}
	var out []budgetEntry
	var problems []budgetProblem
	standings := slices.Clone(d.budgets.Standings(ns, d.clock.Now()))
	slices.SortStableFunc(standings, func(a, b budget.Standing) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	for _, s := range standings {
		for _, p := range s.Problems {
			problems = append(problems, budgetProblem{kind: s.Kind, namespace: s.Namespace, name: s.Name, problem: p})
		}
		for _, r := range s.Resources {
			dim, ok := dimensionOf(r.Dimension)
			if !ok { // never silently: the policies warn of it
				problems = append(problems, budgetProblem{kind: s.Kind, namespace: s.Namespace, name: s.Name,
					problem: fmt.Sprintf("spec.hard: %q: unknown dimension %q", r.Resource, r.Dimension)})
				continue
			}
			demand := eff.Of(r.Family).Get(dim)
			if demand <= 0 {
				continue
			}
			out = append(out, d.budgetEntry(&s, &r, demand, deadline))
		}
	}
	return out, problems
}

// budgetEntry is the entry of resource r of budget s for a demand.
func (d *Decider) budgetEntry(s *budget.Standing, r *budget.ResourceStanding, demand, deadline int64) budgetEntry {
	hard, used := max(int64(r.Hard), 0), max(int64(r.Used), 0)
	e := budgetEntry{BudgetCheck: BudgetCheck{Kind: s.Kind, Namespace: s.Namespace, Name: s.Name, Resource: string(r.Resource),
		Window: s.Window, WindowEnd: s.WindowEnd, Hard: hard, Used: used, Demand: demand, MaxBurn: -1},
		rolling: strings.HasPrefix(s.Window, "rolling"), activeDeadlineSeconds: -1}
	e.percent = 100
	if hard > 0 {
		e.percent = effective.Percent(used, hard)
	}
	for _, w := range d.warnPercents {
		if e.percent >= w {
			e.warnPercent = max(e.warnPercent, w)
		}
	}
	e.Spent = used >= hard
	if deadline >= 0 {
		e.activeDeadlineSeconds = deadline
		e.MaxBurn = maxBurn(deadline, demand)
		e.OverDeadline = !e.Spent && e.MaxBurn > hard-used
		e.maxBurnH = burn.AmountToHours(burn.Amount(e.MaxBurn))
	}
	e.hardH, e.usedH = burn.AmountToHours(burn.Amount(hard)), burn.AmountToHours(burn.Amount(used))
	e.leftH = burn.AmountToHours(burn.Amount(max(hard-used, 0)))
	return e
}

// maxBurn is seconds x 1000 x demand, saturating at math.MaxInt64.
func maxBurn(seconds, demand int64) int64 {
	p := new(big.Int).Mul(big.NewInt(seconds), big.NewInt(1000))
	if p.Mul(p, big.NewInt(demand)); !p.IsInt64() {
		return math.MaxInt64
	}
	return p.Int64()
}

// dimensionOf is the dimension of key: the input's name ("gpu",
// "gpumem", "gpucores") or effective.Dimension's ("count", "memory",
// "cores").
func dimensionOf(key string) (effective.Dimension, bool) {
	for _, dim := range effective.Dimensions() {
		if dimKey(dim) == key || dim.String() == key {
			return dim, true
		}
	}
	return 0, false
}

// deadlineOf is the pod's activeDeadlineSeconds, -1 for none (and for a
// claim, whose pods are not known when it is created).
func deadlineOf(req *Request) int64 {
	if req.Claim != nil || req.Pod.Spec.ActiveDeadlineSeconds == nil {
		return -1
	}
	return max(*req.Pod.Spec.ActiveDeadlineSeconds, 0)
}

// budgetsTerm is input.budgets.
func (d *inputDoc) budgetsTerm(b *builder) *ast.Term {
	items := make([]*ast.Term, len(d.budgets))
	for i := range d.budgets {
		e := &d.budgets[i]
		items[i] = b.object(b.item("kind", b.str(e.Kind)), b.item("name", b.str(e.Name)), b.item("namespace", b.str(e.Namespace)),
			b.item("resource", b.str(e.Resource)), b.item("window", b.str(e.Window)), b.item("rolling", ast.InternedTerm(e.rolling)),
			b.item("windowEnd", b.str(e.WindowEnd.Format(time.RFC3339))),
			b.item("hard", b.num(e.Hard)), b.item("used", b.num(e.Used)), b.item("percent", b.num(e.percent)),
			b.item("hardHours", b.str(e.hardH)), b.item("usedHours", b.str(e.usedH)), b.item("leftHours", b.str(e.leftH)),
			b.item("demand", b.num(e.Demand)), b.item("activeDeadlineSeconds", b.num(e.activeDeadlineSeconds)),
			b.item("maxBurn", b.num(e.MaxBurn)), b.item("maxBurnHours", b.str(e.maxBurnH)),
			b.item("warnPercent", b.num(e.warnPercent)))
	}
	return b.array(items...)
}

// budgetProblemsTerm is input.budgetProblems.
func (d *inputDoc) budgetProblemsTerm(b *builder) *ast.Term {
	items := make([]*ast.Term, len(d.budgetProblems))
	for i, p := range d.budgetProblems {
		items[i] = b.object(b.item("kind", b.str(p.kind)), b.item("name", b.str(p.name)), b.item("namespace", b.str(p.namespace)),
			b.item("problem", b.str(p.problem)))
	}
	return b.array(items...)
}

// overBudget are the checks of doc that deny its pod.
func overBudget(doc *inputDoc) []BudgetCheck {
	var out []BudgetCheck
	for i := range doc.budgets {
		if c := doc.budgets[i].BudgetCheck; c.Exceeded() {
			out = append(out, c)
		}
	}
	return slices.Clip(out)
}

// warnPercents are cfg's budgets.warnPercents (validated: ascending,
// 1..100; defaulted to [80, 95]).
func warnPercents(cfg *config.Configuration) []int64 {
	if cfg.Budgets == nil {
		return nil
	}
	return slices.Clone(cfg.Budgets.WarnPercents)
}
