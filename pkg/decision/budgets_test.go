package decision

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// hour is one resource-hour.
const hour = burn.Amount(burn.MillisPerHour)

// fakeBudgets reports fixed standings per namespace and records the moment
// it was asked about.
type fakeBudgets struct {
	by    map[string][]budget.Standing
	asked time.Time
}

func (f *fakeBudgets) Standings(ns string, now time.Time) []budget.Standing {
	f.asked = now
	return f.by[ns]
}

var berlin = func() *time.Location {
	l, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return l
}()

// windowEnd is the end of December 2026 in Berlin.
var windowEnd = time.Date(2027, 1, 1, 0, 0, 0, 0, berlin)

// gpuBudget is GPUBudget ml-hours of team-a: hard of resource (family
// nvidia, dimension dim) a month, used so far.
func gpuBudget(resource, dim string, hard, used burn.Amount) budget.Standing {
	return budget.Standing{Kind: budget.KindBudget, Namespace: "team-a", Name: "ml-hours", Window: "Monthly Europe/Berlin",
		WindowStart: time.Date(2026, 12, 1, 0, 0, 0, 0, berlin), WindowEnd: windowEnd,
		Resources: []budget.ResourceStanding{{Resource: corev1.ResourceName(resource), Family: "nvidia", Dimension: dim, Hard: hard, Used: used}}}
}

// budgetDecider decides on a ledger knowing team-a and team-b (no quota)
// and one node of 8 24 GiB GPUs, holding the budgets b reports at clk's now.
func budgetDecider(t *testing.T, ev Evaluator, b Budgets, clk *clocktesting.FakeClock) *Decider {
	t.Helper()
	return budgetDeciderWith(t, config.Default(), ev, b, clk)
}

// budgetDeciderWith is budgetDecider with the configuration cfg.
func budgetDeciderWith(t *testing.T, cfg *config.Configuration, ev Evaluator, b Budgets, clk *clocktesting.FakeClock) *Decider {
	t.Helper()
	fams := config.Families(cfg)
	ch, err := dra.NewCharger(config.DeviceClasses(cfg), fams)
	if err != nil {
		t.Fatal(err)
	}
	l := ledger.New(ledger.Options{Families: fams, Claims: ch, Log: logr.Discard()})
	testns.Known(l, "team-a")
	testns.Known(l, "team-b")
	l.UpsertNode(testnode.WithGPUs("a10-1", nil, 24576, 24576, 24576, 24576, 24576, 24576, 24576, 24576))
	d, err := New(ev, l, cfg, logr.Discard(), WithBudgets(b, clk))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// gpuPod is a pod of n GPUs of 1024 MiB in ns, with an activeDeadlineSeconds
// when deadline >= 0.
func gpuPod(ns string, n, deadline int64) *corev1.Pod {
	p := testpod.New("p").NS(ns).App("c", testpod.GPU(n), testpod.Mem(1024)).Build()
	if deadline >= 0 {
		p.Spec.ActiveDeadlineSeconds = ptr.To(deadline)
	}
	return p
}

const spentMsg = `namespace "team-a": GPUBudget "ml-hours" is spent: 1 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`

type budgetCase struct {
	name      string
	standings map[string][]budget.Standing
	req       Request
	allowed   bool
	denials   []string // exactly
	warnings  []string // exactly
	over      []string // OverBudget's names
}

func budgetCases() []budgetCase {
	gpu := func(hard, used burn.Amount) map[string][]budget.Standing {
		return map[string][]budget.Standing{"team-a": {gpuBudget("nvidia.com/gpu", "gpu", hard, used)}}
	}
	rolling := gpuBudget("nvidia.com/gpu", "gpu", hour, hour)
	rolling.Kind, rolling.Namespace, rolling.Name, rolling.Window = budget.KindClusterBudget, "", "ml", "rolling 720h0m0s"
	broken := gpuBudget("nvidia.com/gpu", "gpu", hour, 0)
	broken.Problems = []string{`spec.hard: "example.com/fpga" is not a resource gpuadmit governs`}
	broken.Resources = append(broken.Resources, budget.ResourceStanding{Resource: "example.com/fpga", Family: "nvidia", Dimension: "fpga", Used: 5 * hour})
	tracker := gpuBudget("nvidia.com/gpu", "count", hour, hour) // the Tracker's name of the dimension
	return []budgetCase{
		{name: "spent: the next GPU pod is denied with the window end", standings: gpu(hour, hour), req: Request{Pod: gpuPod("team-a", 1, -1)},
			denials: []string{spentMsg}, over: []string{"ml-hours"}},
		{name: "overrun by running pods: still denied", standings: gpu(hour, 3*hour), req: Request{Pod: gpuPod("team-a", 1, -1)},
			denials: []string{`namespace "team-a": GPUBudget "ml-hours" is spent: 3 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "one millisecond short of spent: allowed, warned at 95 %", standings: gpu(hour, hour-1), req: Request{Pod: gpuPod("team-a", 1, -1)},
			allowed: true, warnings: []string{`namespace "team-a": GPUBudget "ml-hours" has used 99 % of its nvidia.com/gpu-hours (0.99 of 1, 0 left until 2027-01-01T00:00:00+01:00)`}},
		{name: "80 % warns", standings: gpu(hour, hour*8/10), req: Request{Pod: gpuPod("team-a", 1, -1)},
			allowed: true, warnings: []string{`namespace "team-a": GPUBudget "ml-hours" has used 80 % of its nvidia.com/gpu-hours (0.8 of 1, 0.2 left until 2027-01-01T00:00:00+01:00)`}},
		{name: "under 80 % is silent", standings: gpu(hour, hour*8/10-1), req: Request{Pod: gpuPod("team-a", 1, -1)}, allowed: true},
		{name: "a pod that is not a GPU pod is unaffected", standings: gpu(hour, 2*hour),
			req: Request{Pod: testpod.New("cpu").NS("team-a").App("c", testpod.CPU("1")).Build()}, allowed: true},
		{name: "a namespace without a budget is unaffected", standings: gpu(hour, 2*hour), req: Request{Pod: gpuPod("team-b", 1, -1)}, allowed: true},
		{name: "a budget of a resource the pod does not burn does not hold it",
			standings: map[string][]budget.Standing{"team-a": {gpuBudget("nvidia.com/gpucores", "gpucores", hour, 2*hour)}},
			req:       Request{Pod: gpuPod("team-a", 1, -1)}, allowed: true},
		{name: "memory budgets count MiB-hours", standings: map[string][]budget.Standing{"team-a": {gpuBudget("nvidia.com/gpumem", "gpumem", 1024*hour, 1024*hour)}},
			req:     Request{Pod: gpuPod("team-a", 1, -1)},
			denials: []string{`namespace "team-a": GPUBudget "ml-hours" is spent: 1024 of 1024 nvidia.com/gpumem-hours used; no new pod using nvidia.com/gpumem is admitted until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "a deadline that lets the pod burn past what is left is denied up front", standings: gpu(2*hour, hour+hour/2),
			req:     Request{Pod: gpuPod("team-a", 1, 7200)},
			denials: []string{`namespace "team-a": activeDeadlineSeconds 7200 lets this pod burn up to 2 nvidia.com/gpu-hours, GPUBudget "ml-hours" has 0.5 left until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "the deadline counts every device", standings: gpu(2*hour, hour+hour/2), req: Request{Pod: gpuPod("team-a", 2, 900)},
			allowed: true},
		{name: "a deadline one second too long for two devices", standings: gpu(2*hour, hour+hour/2), req: Request{Pod: gpuPod("team-a", 2, 901)},
			denials: []string{`namespace "team-a": activeDeadlineSeconds 901 lets this pod burn up to 0.5 nvidia.com/gpu-hours, GPUBudget "ml-hours" has 0.5 left until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "a huge deadline saturates and is denied", standings: gpu(2*hour, 0), req: Request{Pod: gpuPod("team-a", 8, math.MaxInt64)},
			denials: []string{`namespace "team-a": activeDeadlineSeconds 9223372036854775807 lets this pod burn up to 2562047788015.21 nvidia.com/gpu-hours, GPUBudget "ml-hours" has 2 left until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "a hostile standing: negative hard holds as 0", standings: gpu(-hour, -5*hour), req: Request{Pod: gpuPod("team-a", 1, -1)},
			denials: []string{`namespace "team-a": GPUBudget "ml-hours" is spent: 0 of 0 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "a claim is held as a pod", standings: gpu(hour, hour), req: Request{Claim: testclaim.HAMiDRA("team-a", "c", 1, 1024, 0)},
			denials: []string{`namespace "team-a": GPUBudget "ml-hours" is spent: 1 of 1 nvidia.com/gpu-hours used; no new claim using nvidia.com/gpu is admitted until 2027-01-01T00:00:00+01:00`},
			over:    []string{"ml-hours"}},
		{name: "an update is not held", standings: gpu(hour, hour), req: Request{Pod: gpuPod("team-a", 1, -1), Operation: "UPDATE"}, allowed: true},
		{name: "a team's rolling budget", standings: map[string][]budget.Standing{"team-a": {rolling}}, req: Request{Pod: gpuPod("team-a", 1, -1)},
			denials: []string{`namespace "team-a": GPUClusterBudget "ml" is spent: 1 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until enough of its burn leaves the rolling 720h0m0s window`},
			over:    []string{"ml"}},
		{name: "every budget passed is named: the namespace's and the team's",
			standings: map[string][]budget.Standing{"team-a": {rolling, gpuBudget("nvidia.com/gpu", "gpu", hour, hour)}},
			req:       Request{Pod: gpuPod("team-a", 1, -1)},
			denials: []string{spentMsg,
				`namespace "team-a": GPUClusterBudget "ml" is spent: 1 of 1 nvidia.com/gpu-hours used; no new pod using nvidia.com/gpu is admitted until enough of its burn leaves the rolling 720h0m0s window`},
			over: []string{"ml-hours", "ml"}},
		{name: "a dimension named as effective names it", standings: map[string][]budget.Standing{"team-a": {tracker}},
			req: Request{Pod: gpuPod("team-a", 1, -1)}, denials: []string{spentMsg}, over: []string{"ml-hours"}},
		{name: "a key that cannot be enforced is warned of, the others held", standings: map[string][]budget.Standing{"team-a": {broken}},
			req: Request{Pod: gpuPod("team-a", 1, -1)}, allowed: true,
			warnings: []string{`namespace "team-a": GPUBudget "ml-hours" is not enforced in part: spec.hard: "example.com/fpga" is not a resource gpuadmit governs`,
				`namespace "team-a": GPUBudget "ml-hours" is not enforced in part: spec.hard: "example.com/fpga": unknown dimension "fpga"`}},
	}
}

// TestBudgetsHoldAdmission attacks the GPU-hour budgets: a spent budget,
// one passed by running pods, a deadline that would pass what is left,
// hostile standings, claims; and checks what they must leave alone (other
// namespaces, pods that burn none of the budget's resources, updates).
func TestBudgetsHoldAdmission(t *testing.T) {
	e := loadedEngine(t)
	for _, tc := range budgetCases() {
		t.Run(tc.name, func(t *testing.T) {
			b := &fakeBudgets{by: tc.standings}
			clk := clocktesting.NewFakeClock(time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC))
			captured := &capturing{Evaluator: e}
			d := budgetDecider(t, captured, b, clk)
			res, err := d.Decide(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed != tc.allowed || !equalStrings(res.Denials, tc.denials) || !equalStrings(res.Warnings, tc.warnings) {
				t.Fatalf("allowed %v\ndenials %q\nwarnings %q\nwant %v\n%q\n%q", res.Allowed, res.Denials, res.Warnings, tc.allowed, tc.denials, tc.warnings)
			}
			var over []string
			for _, c := range res.OverBudget {
				over = append(over, c.Name)
			}
			if !equalStrings(over, tc.over) {
				t.Errorf("OverBudget %v, want %v", over, tc.over)
			}
			if captured.last != nil {
				matchesSchema(t, captured.last)
				checkKeys(t, d.words, ast.NewTerm(captured.last), "input")
				if !b.asked.Equal(clk.Now()) {
					t.Errorf("standings asked at %v, want the decider's clock %v", b.asked, clk.Now())
				}
			}
		})
	}
}

// equalStrings compares as sets (the policies' messages are a set).
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[string]bool{}
	for _, s := range a {
		in[s] = true
	}
	for _, s := range b {
		if !in[s] {
			return false
		}
	}
	return true
}

// TestBudgetsNoneWithoutTracker: a Decider without budgets builds an empty
// input.budgets (no standing is asked for).
func TestBudgetsNoneWithoutTracker(t *testing.T) {
	captured := &capturing{Evaluator: loadedEngine(t)}
	d := budgetDecider(t, captured, nil, clocktesting.NewFakeClock(time.Now()))
	res, err := d.Decide(context.Background(), Request{Pod: gpuPod("team-a", 1, 60)})
	if err != nil || !res.Allowed {
		t.Fatalf("%v %+v", err, res)
	}
	doc, err := ast.JSON(captured.last)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := field(doc, "budgets").([]any); !ok || len(got) != 0 {
		t.Errorf("input.budgets = %v, want []", got)
	}
}

// TestBudgetWarnPercentsFromConfig: the thresholds are the configuration's
// budgets.warnPercents: [90] is silent at 89 % and warns at 90 %; [] never
// warns, even one millisecond short of spent (which is still allowed).
func TestBudgetWarnPercentsFromConfig(t *testing.T) {
	e := loadedEngine(t)
	for _, tc := range []struct {
		percents []int64
		used     burn.Amount
		warn     string
	}{
		{percents: []int64{90}, used: hour * 89 / 100},
		{percents: []int64{90}, used: hour * 90 / 100,
			warn: `namespace "team-a": GPUBudget "ml-hours" has used 90 % of its nvidia.com/gpu-hours (0.9 of 1, 0.1 left until 2027-01-01T00:00:00+01:00)`},
		{percents: []int64{}, used: hour - 1},
	} {
		cfg := config.Default()
		cfg.Budgets.WarnPercents = tc.percents
		b := &fakeBudgets{by: map[string][]budget.Standing{"team-a": {gpuBudget("nvidia.com/gpu", "gpu", hour, tc.used)}}}
		d := budgetDeciderWith(t, cfg, e, b, clocktesting.NewFakeClock(time.Now()))
		res, err := d.Decide(context.Background(), Request{Pod: gpuPod("team-a", 1, -1)})
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if tc.warn != "" {
			want = []string{tc.warn}
		}
		if !res.Allowed || !equalStrings(res.Warnings, want) {
			t.Errorf("%v at %d: allowed %v, warnings %q; want %q", tc.percents, tc.used, res.Allowed, res.Warnings, want)
		}
	}
}
