package decision

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// guardedFiles are the built-in rule files whose rules read input.guard:
// stripping the guards must find something to drop in each.
var guardedFiles = []string{"limits.rego", "capacity.rego", "requests.rego", "budgets.rego"}

// guardedRules are the rules (by their messages, ruleOf) that a guard lets
// OPA's index skip (every built-in deny and warn rule, through
// input.guard.quiet): every one but the claims' must fire in a
// differential run (the pods' errors rule starts from the same list).
var guardedRules = []string{"limits/deny", "limits/near", "limits/native", "limits/scoped-deny", "limits/scoped-near",
	"limits/team-deny", "limits/team-near", "capacity/deny", "capacity/warn",
	"requests/errors", "requests/unresolved", "requests/unresolvedFamilies",
	"budgets/spent", "budgets/deadline", "budgets/near", "budgets/problem"}

// unguarded is the built-in policy set with every line that reads
// input.guard dropped: the same rules, never skipped by a guard.
func unguarded(t testing.TB) fs.FS {
	t.Helper()
	out := fstest.MapFS{}
	for name, src := range builtinSources(t) {
		lines := strings.Split(src, "\n")
		kept := slices.DeleteFunc(slices.Clone(lines), func(l string) bool {
			return strings.Contains(l, "input.guard.") && !strings.HasPrefix(strings.TrimSpace(l), "#")
		})
		if slices.Contains(guardedFiles, name) && len(kept) == len(lines) {
			t.Fatalf("%s: no guard to drop", name)
		}
		out[name] = &fstest.MapFile{Data: []byte(strings.Join(kept, "\n"))}
	}
	return out
}

// twin evaluates each input with the guarded built-in rules and with the
// same rules unguarded, requires the same denials and warnings, and counts
// which rules fired.
type twin struct {
	t              testing.TB
	guarded, plain *policy.Engine
	tried          int
	fired          map[string]int
}

func newTwin(t testing.TB) *twin {
	t.Helper()
	ctx := context.Background()
	g, p := policy.New(policy.Options{}), policy.New(policy.Options{Base: unguarded(t)})
	if err := g.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.Load(ctx); err != nil {
		t.Fatal(err)
	}
	return &twin{t: t, guarded: g, plain: p, fired: map[string]int{}}
}

func (tw *twin) Eval(ctx context.Context, in ast.Value) (policy.Output, error) {
	g, err := tw.guarded.Eval(ctx, in)
	if err != nil {
		return g, err
	}
	p, err := tw.plain.Eval(ctx, in)
	if err != nil {
		return p, err
	}
	tw.tried++
	if !slices.Equal(g.Deny, p.Deny) || !slices.Equal(g.Warn, p.Warn) {
		tw.t.Errorf("guarded: deny %q warn %q\nunguarded: deny %q warn %q\ninput %v", g.Deny, g.Warn, p.Deny, p.Warn, in)
	}
	for _, m := range p.Deny {
		tw.fired[ruleOf(m, "deny")]++
	}
	for _, m := range p.Warn {
		tw.fired[ruleOf(m, "warn")]++
	}
	return g, nil
}

// ruleOf names the built-in rule that words message m.
func ruleOf(m, kind string) string {
	rules := []struct{ sub, rule string }{
		{"is spent:", "budgets/spent"},
		{"lets this pod burn up to", "budgets/deadline"},
		{"-hours (", "budgets/near"},
		{"is not enforced in part", "budgets/problem"},
		{"used by the pods in the scopes of", "limits/scoped-" + kind},
		{"in the team's namespaces, limit", "limits/team-deny"},
		{"of the limit of", "limits/team-near"},
		{"reserved, limit", "limits/deny"},
		{"of its limit for the pods in the scopes", "limits/scoped-near"},
		{"of its limit after this pod", "limits/near"},
		{"init-container peak", "limits/native"},
		{"can never get its", "capacity/" + kind},
		{"no node the pod may run on has that", "capacity/" + kind},
		{"no GPU node it could run on announces", "requests/unresolved"},
		{"no node it could run on announces the memory", "requests/unresolvedFamilies"},
		{"ResourceClaim", "requests/claimErrors"},
		{"container ", "requests/errors"},
	}
	for _, r := range rules {
		if strings.Contains(m, r.sub) {
			return r.rule
		}
	}
	return "other/" + kind
}

// guardCluster is a random cluster and the Decider over it: namespaces
// with quotas near and over their limits (nvidia and Ascend, native
// requests quotas), nodes of several device sizes (or none), running
// pods, a near-limit percentage and the unsatisfiable setting; and, each
// sometimes, a scoped quota, a team quota and budgets (addGuardExtras).
func guardCluster(t testing.TB, r *rand.Rand, ev Evaluator) *Decider {
	t.Helper()
	fams := twoFamilies()
	l := ledger.New(ledger.Options{Families: fams, Log: logr.Discard()})
	sizes := []int64{8192, 16384, 24576, 81920}
	for i := range r.IntN(4) {
		name := fmt.Sprintf("n%d", i)
		var devs []devices.Device
		for j := range 1 + r.IntN(3) {
			devs = append(devs, devices.Device{UUID: fmt.Sprintf("GPU-%s-%d", name, j), Index: j, MemoryMiB: sizes[r.IntN(len(sizes))],
				Cores: []int64{30, 60, 100}[r.IntN(3)], Healthy: r.IntN(6) > 0})
		}
		l.UpsertNode(testnode.WithDevices(name, map[string]string{"zone": fmt.Sprint(r.IntN(2))}, devs...))
	}
	for i := range 3 {
		ns := fmt.Sprintf("ns-%d", i)
		testns.Known(l, ns)
		hard := map[string]string{}
		pick := func(key string, vals ...int64) {
			if r.IntN(2) == 0 {
				hard[key] = fmt.Sprint(vals[r.IntN(len(vals))])
			}
		}
		pick("limits.nvidia.com/gpu", 0, 1, 2, 3, 5, 10)
		pick("limits.nvidia.com/gpumem", 1000, 8192, 20000, 30000, 60000)
		pick("limits.nvidia.com/gpucores", 10, 50, 100, 300)
		pick("limits."+string(ascendMem), 16384, 40000, 65536)
		pick("limits."+string(ascendCount), 1, 2)
		pick("requests.nvidia.com/gpu", 4)
		if len(hard) > 0 {
			l.UpsertQuota(testquota.New(ns, "q", hard))
		}
		for j := range r.IntN(3) {
			l.UpsertPod(guardPod(r, fmt.Sprintf("run-%d-%d", i, j), ns, false))
		}
	}
	cfg := config.Default()
	cfg.Admission.NearLimitPercent = ptr.To([]int64{0, 50, 80, 90}[r.IntN(4)])
	if r.IntN(3) == 0 {
		cfg.Admission.Unsatisfiable = ptr.To(configv1alpha1.UnsatisfiableWarn)
	}
	d, err := newDecider(ev, l, cfg, fams, logr.Discard(), addGuardExtras(r, l))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// guardPod is a random pod of ns: nvidia containers with memory in MiB,
// percentages, whole cards or cores, Ascend NPUs with or without memory,
// sometimes an unreadable request, a selector no node matches.
func guardPod(r *rand.Rand, name, ns string, hostile bool) *corev1.Pod {
	gpu, mem, pct, cores := testpod.GPU, testpod.Mem, testpod.MemPct, testpod.Cores
	opts := [][]testpod.Opt{
		{gpu(1), mem(1024)}, {gpu(1), mem(12000)}, {gpu(2), mem(20000)}, {gpu(1), pct(50)}, {gpu(1)}, {gpu(3), mem(4096), cores(40)},
		{gpu(1), mem(30000), cores(100)}, {gpu(1), mem(2048), cores(50)}, {gpu(2), cores(80)}, npu(1, 16384), npu(2, 40000), {testpod.Res(ascendCount, "1")}, {testpod.CPU("1")},
	}
	b := testpod.New(name).NS(ns)
	if r.IntN(3) == 0 {
		b.Init("init", opts[r.IntN(len(opts))]...)
	}
	for i := range 1 + r.IntN(2) {
		b.App(fmt.Sprint("app", i), opts[r.IntN(len(opts))]...)
	}
	if hostile && r.IntN(12) == 0 {
		b.App("bad", testpod.Res(testpod.GPUName, "1500m"))
	}
	if hostile && r.IntN(6) == 0 {
		b.NodeSelector("zone", fmt.Sprint(r.IntN(3)))
	}
	return b.Build()
}

// runGuards decides pods random pods on one random cluster of seed through
// tw (CREATE mostly, UPDATE sometimes).
func runGuards(t testing.TB, tw *twin, seed uint64, pods int) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	d := guardCluster(t, r, tw)
	l, ok := d.snap.(*ledger.Ledger)
	if !ok {
		t.Fatalf("the decider reads %T, not the ledger", d.snap)
	}
	before := ledgerJSON(t, l)
	for i := range pods {
		req := guardRequest(r, d, Request{Pod: guardPod(r, fmt.Sprint("p", i), fmt.Sprintf("ns-%d", r.IntN(3)), true)})
		if r.IntN(8) == 0 {
			req.Operation = "UPDATE"
		}
		if _, err := d.Decide(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		// The snapshots a decision reads share the ledger's limits and
		// used sums: deciding must leave them as they were.
		if after := ledgerJSON(t, l); after != before {
			t.Fatalf("seed %d: deciding pod %d changed the ledger:\n%s\nnow\n%s", seed, i, before, after)
		}
	}
}

// ledgerJSON is the whole ledger l as JSON (pointers followed).
func ledgerJSON(t testing.TB, l *ledger.Ledger) string {
	t.Helper()
	b, err := json.Marshal(l.Snapshot(nil))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGuardsDecideAsUnguarded: on random clusters and pods decided through
// the Decider, the built-in rules with input.guard decide as the same rules
// without it (verdicts and messages), and every guarded rule fires.
func TestGuardsDecideAsUnguarded(t *testing.T) {
	tw := newTwin(t)
	for seed := range uint64(150) {
		runGuards(t, tw, seed, 12)
	}
	t.Logf("inputs tried %d, fired %v", tw.tried, tw.fired)
	if tw.tried < 1000 {
		t.Errorf("tried %d inputs, want at least 1000", tw.tried)
	}
	for _, rule := range guardedRules {
		if tw.fired[rule] < 5 {
			t.Errorf("guarded rule %s fired %d times, want at least 5 (the generator must reach it)", rule, tw.fired[rule])
		}
	}
}

// FuzzGuardsDecideAsUnguarded is TestGuardsDecideAsUnguarded's comparison
// on the cluster and pods of a fuzzed seed.
func FuzzGuardsDecideAsUnguarded(f *testing.F) {
	for _, s := range []uint64{0, 1, 7, 42, 1 << 40} {
		f.Add(s)
	}
	tw := newTwin(f)
	f.Fuzz(func(t *testing.T, seed uint64) {
		tw.t = t
		runGuards(t, tw, seed, 6)
	})
}
