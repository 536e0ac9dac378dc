package decision_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/policy"
)

// nvidia is the name of the configuration's nvidia family, the key of its
// usage in a Result's Effective.
var nvidia = config.Families(config.Default())[0].Name

// nv is the usage holding {g, m, c} for the nvidia family alone.
func nv(g, m, c int64) effective.Usage {
	return effective.UsageOf(nvidia, effective.Vector{GPU: g, MemMiB: m, Cores: c})
}

// newLedger is an empty ledger reading the default configuration's
// families, as the webhook's (pkg/server) reads its configuration's.
func newLedger() *ledger.Ledger {
	return ledger.New(ledger.Options{Families: config.Families(config.Default()), Log: logr.Discard()})
}

// configWith is the default configuration changed by f (when set).
func configWith(f func(*config.Configuration)) *config.Configuration {
	c := config.Default()
	if f != nil {
		f(c)
	}
	return c
}

// engine is loaded once: compiling and testing the policies takes a while.
func engine(t testing.TB, overrides ...policy.Source) *policy.Engine {
	t.Helper()
	e := policy.New(policy.Options{})
	if err := e.Load(context.Background(), overrides...); err != nil {
		t.Fatal(err)
	}
	return e
}

// countingEvaluator counts policy evaluations.
type countingEvaluator struct {
	decision.Evaluator
	calls int
}

func (c *countingEvaluator) Eval(ctx context.Context, in ast.Value) (policy.Output, error) {
	c.calls++
	return c.Evaluator.Eval(ctx, in)
}

type failingEvaluator struct{}

func (failingEvaluator) Eval(context.Context, ast.Value) (policy.Output, error) {
	return policy.Output{}, context.DeadlineExceeded
}

func withSelector(p *corev1.Pod, sel map[string]string) *corev1.Pod {
	p.Spec.NodeSelector = sel
	return p
}

func withAffinity(p *corev1.Pod, key string, values ...string) *corev1.Pod {
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}}}}
	return p
}

func TestDecide(t *testing.T) {
	e := engine(t)
	gpu, mem, pct, cores := testpod.GPU, testpod.Mem, testpod.MemPct, testpod.Cores
	a10 := testnode.WithGPUs("a10-1", map[string]string{"gpu": "a10"}, 24576)
	h100 := testnode.WithGPUs("h100-1", map[string]string{"gpu": "h100"}, 81920, 81920)
	teamQuota := testquota.New("team-a", "gpu-quota", map[string]string{"limits.nvidia.com/gpumem": "24576"})
	tests := []struct {
		name     string
		nodes    []*corev1.Node
		quotas   []*corev1.ResourceQuota
		running  []*corev1.Pod
		reserve  effective.Usage
		cfg      func(*config.Configuration)
		pod      *corev1.Pod
		req      decision.Request // Pod is set from pod
		wantEval bool
		invalid  bool // the request is invalid: Demand is an error
		want     decision.Result
	}{
		{name: "pod without GPU resources, as the edge answered: fast path, no policy evaluation", quotas: []*corev1.ResourceQuota{teamQuota},
			pod: testpod.New("web").NS("team-a").App("nginx", testpod.CPU("1")).Build(), req: decision.Request{NoManagedResource: true},
			want: decision.Result{Allowed: true}},
		{name: "pod without GPU resources, the edge did not answer: decided in full", quotas: []*corev1.ResourceQuota{teamQuota},
			pod: testpod.New("web").NS("team-a").App("nginx", testpod.CPU("1")).Build(), wantEval: true,
			want: decision.Result{Allowed: true}},
		{name: "a GPU pod the edge answered has no managed resource: trusted, not evaluated", quotas: []*corev1.ResourceQuota{teamQuota},
			pod: testpod.New("p").NS("team-a").App("c", gpu(1), mem(1024)).Build(), req: decision.Request{NoManagedResource: true},
			want: decision.Result{Allowed: true}},
		{name: "seed 1: init 30 GiB against a 24 GiB quota and a 24 GiB GPU", nodes: []*corev1.Node{a10}, quotas: []*corev1.ResourceQuota{teamQuota},
			pod: testpod.New("llm").NS("team-a").Init("convert", gpu(1), mem(30720)).App("server", gpu(1), mem(4096)).Build(), wantEval: true,
			want: decision.Result{Effective: nv(1, 30720, 0), Denials: []string{
				`namespace "team-a": nvidia.com/gpumem: pod needs 30720 MiB, 0 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`,
				`namespace "team-a": pod "llm": container "convert" needs 1 device(s) with 30720 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)`}}},
		{name: "seed 2: init 20 GiB then app 10 GiB fits", nodes: []*corev1.Node{a10}, quotas: []*corev1.ResourceQuota{teamQuota},
			pod: testpod.New("llm").NS("team-a").Init("convert", gpu(1), mem(20480)).App("server", gpu(1), mem(10240)).Build(), wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(1, 20480, 0)}},
		{name: "reservations count", nodes: []*corev1.Node{a10}, quotas: []*corev1.ResourceQuota{teamQuota}, reserve: nv(1, 8192, 0),
			pod: testpod.New("job").NS("team-a").App("c", gpu(1), mem(20480)).Build(), wantEval: true,
			want: decision.Result{Effective: nv(1, 20480, 0), Denials: []string{
				`namespace "team-a": nvidia.com/gpumem: pod needs 20480 MiB, 0 MiB used + 8192 MiB reserved, limit 24576 MiB (ResourceQuota "gpu-quota" limits.nvidia.com/gpumem)`}}},
		{name: "near the limit warns", nodes: []*corev1.Node{a10}, quotas: []*corev1.ResourceQuota{teamQuota},
			running: []*corev1.Pod{testpod.New("other").NS("team-a").App("c", gpu(1), mem(10240)).Node("a10-1").AppRunning("c").Build()},
			pod:     testpod.New("job").NS("team-a").App("c", gpu(1), mem(12288)).Build(), wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(1, 12288, 0), Warnings: []string{
				`namespace "team-a": nvidia.com/gpumem will be at 91 % of its limit after this pod (22528 of 24576 MiB, ResourceQuota "gpu-quota")`}}},
		{name: "invalid request denied by name", nodes: []*corev1.Node{a10},
			pod: testpod.New("bad").NS("team-a").App("app", testpod.Res(testpod.GPUName, "1500m")).Build(), wantEval: true, invalid: true,
			want: decision.Result{Denials: []string{`namespace "team-a": pod "bad": container "app": nvidia.com/gpu "1500m": must be a whole number`}}},
		{name: "percentage resolved against the largest eligible device", nodes: []*corev1.Node{a10, h100},
			pod: withSelector(testpod.New("nb").NS("team-a").App("jupyter", gpu(1), pct(50)).Build(), map[string]string{"gpu": "a10"}), wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(1, 12288, 0)}},
		{name: "whole device defaults to the largest device of all nodes", nodes: []*corev1.Node{a10, h100},
			pod: testpod.New("nb").NS("team-a").App("jupyter", gpu(2)).Build(), wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(2, 163840, 200)}},
		{name: "percentage with no known node is unresolved", quotas: []*corev1.ResourceQuota{teamQuota},
			pod: testpod.New("nb").NS("team-a").App("jupyter", gpu(1), pct(50)).Build(), wantEval: true,
			want: decision.Result{Effective: nv(1, 0, 0), Denials: []string{
				`namespace "team-a": pod "nb": container "jupyter" needs 50 % of the memory of each of its 1 device(s) (nvidia.com/gpumem-percentage, or the whole device when no nvidia.com/gpumem is set), but no GPU node it could run on announces its device memory, so the request cannot be counted in MiB against the namespace's limits; set nvidia.com/gpumem in MiB, or have the GPU nodes announce their devices: HAMi's device plugin registers them in the node annotation hami.io/node-nvidia-register, gpuadmit's node agent (the chart's agent.enabled) in gpuadmit.io/gpu-devices`}}},
		{name: "required node affinity honoured", nodes: []*corev1.Node{a10, h100},
			pod: withAffinity(testpod.New("train").NS("team-a").App("t", gpu(2), mem(40960), cores(50)).Build(), "gpu", "a10"), wantEval: true,
			want: decision.Result{Effective: nv(2, 81920, 100), Denials: []string{
				`namespace "team-a": pod "train": container "t" needs 2 device(s) with 40960 MiB and 50 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)`}}},
		{name: "without affinity the same pod fits the H100 node", nodes: []*corev1.Node{a10, h100},
			pod: testpod.New("train").NS("team-a").App("t", gpu(2), mem(40960), cores(50)).Build(), wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(2, 81920, 100)}},
		{name: "unsatisfiable as a warning", nodes: []*corev1.Node{a10}, cfg: func(c *config.Configuration) { c.Admission.Unsatisfiable = ptr.To(configv1alpha1.UnsatisfiableWarn) },
			pod: testpod.New("big").NS("team-a").App("c", gpu(1), mem(30720)).Build(), wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(1, 30720, 0), Warnings: []string{
				`namespace "team-a": pod "big": container "c" needs 1 device(s) with 30720 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 1 healthy device(s) on one node)`}}},
		{name: "no node matches the selector", nodes: []*corev1.Node{a10},
			pod: withSelector(testpod.New("p").NS("team-a").App("c", gpu(1), mem(1024)).Build(), map[string]string{"gpu": "b200"}), wantEval: true,
			want: decision.Result{Effective: nv(1, 1024, 0), Denials: []string{
				`namespace "team-a": pod "p": no GPU node matches the pod's nodeSelector and required node affinity, so container "c" can never get its 1 device(s)`}}},
		{name: "request namespace wins; UPDATE does not recount", nodes: []*corev1.Node{a10}, quotas: []*corev1.ResourceQuota{testquota.New("team-b", "q", map[string]string{"limits.nvidia.com/gpu": "0"})},
			pod: testpod.New("p").NS("").App("c", gpu(1), mem(1024)).Build(), req: decision.Request{Namespace: "team-b", Operation: "UPDATE"}, wantEval: true,
			want: decision.Result{Allowed: true, Effective: nv(1, 1024, 0)}},
		{name: "request namespace, CREATE", nodes: []*corev1.Node{a10}, quotas: []*corev1.ResourceQuota{testquota.New("team-b", "q", map[string]string{"limits.nvidia.com/gpu": "0"})},
			pod: testpod.New("p").NS("").App("c", gpu(1), mem(1024)).Build(), req: decision.Request{Namespace: "team-b"}, wantEval: true,
			want: decision.Result{Effective: nv(1, 1024, 0), Denials: []string{
				`namespace "team-b": nvidia.com/gpu: pod needs 1, 0 used + 0 reserved, limit 0 (ResourceQuota "q" limits.nvidia.com/gpu)`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			testns.Known(l, "default", "team-a", "team-b")
			for _, n := range tt.nodes {
				l.UpsertNode(n)
			}
			for _, q := range tt.quotas {
				l.UpsertQuota(q)
			}
			for _, p := range tt.running {
				l.UpsertPod(p)
			}
			ev := &countingEvaluator{Evaluator: e}
			d, err := decision.New(ev, l, configWith(tt.cfg), logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			req := tt.req
			req.Pod = tt.pod
			if !tt.reserve.IsZero() {
				req.Reservations = []reservation.Reservation{{UID: "uid-earlier", Name: "earlier", Demand: tt.reserve}}
			}
			got, err := d.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if (ev.calls > 0) != tt.wantEval {
				t.Errorf("policy evaluations: %d, want evaluation %v", ev.calls, tt.wantEval)
			}
			if got.Allowed != tt.want.Allowed || !got.Effective.Equal(tt.want.Effective) ||
				!slices.Equal(got.Denials, tt.want.Denials) || !slices.Equal(got.Warnings, tt.want.Warnings) {
				t.Errorf("got  allowed=%v effective=%v\n  denials=%q\n  warnings=%q\nwant allowed=%v effective=%v\n  denials=%q\n  warnings=%q",
					got.Allowed, got.Effective, got.Denials, got.Warnings, tt.want.Allowed, tt.want.Effective, tt.want.Denials, tt.want.Warnings)
			}
			if got.Invalid != tt.invalid {
				t.Errorf("Invalid = %v, want %v", got.Invalid, tt.invalid)
			}
			// The mutating webhook's Demand agrees with the decision.
			dem, err := d.Demand(context.Background(), tt.pod)
			gpu := d.Requests(tt.pod)
			switch {
			case tt.invalid:
				if err == nil {
					t.Errorf("Demand of an invalid pod: %+v, want an error", dem)
				}
			case err != nil:
				t.Errorf("Demand: %v", err)
			case !gpu && dem != nil:
				t.Errorf("Demand of a non-GPU pod = %+v, want nil", dem)
			case gpu && tt.wantEval && (dem == nil || !dem.Effective().Equal(got.Effective)):
				t.Errorf("Demand = %v, decision effective %v", dem.Effective(), got.Effective)
			}
		})
	}
}

// TestCapacityChangeSeen: the cached view of all nodes follows node changes.
func TestCapacityChangeSeen(t *testing.T) {
	l := newLedger()
	testns.Known(l, "a")
	l.UpsertNode(testnode.WithGPUs("n1", nil, 24576))
	d, err := decision.New(engine(t), l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	pod := testpod.New("nb").NS("a").App("c", testpod.GPU(1), testpod.MemPct(50)).Build()
	for _, step := range []struct {
		node *corev1.Node
		want int64
	}{{nil, 12288}, {testnode.WithGPUs("n2", nil, 81920), 40960}} {
		if step.node != nil {
			l.UpsertNode(step.node)
		}
		res, err := d.Decide(context.Background(), decision.Request{Pod: pod})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Effective.Of(nvidia).MemMiB; got != step.want {
			t.Errorf("gpumem = %d, want %d", got, step.want)
		}
	}
}

func TestDecideErrors(t *testing.T) {
	l := newLedger()
	testns.Known(l, "default")
	tests := []struct {
		name    string
		ev      decision.Evaluator
		cfg     func(*config.Configuration)
		pod     *corev1.Pod
		wantNew string
		wantErr error
	}{
		{name: "policy failure is an error, not a decision", ev: failingEvaluator{},
			pod: testpod.New("p").App("c", testpod.GPU(1)).Build(), wantErr: context.DeadlineExceeded},
		{name: "no pod", ev: failingEvaluator{}},
		{name: "bad threshold", ev: failingEvaluator{}, cfg: func(c *config.Configuration) { c.Admission.NearLimitPercent = ptr.To[int64](120) }, wantNew: "admission.nearLimitPercent: Invalid value: 120: must be within 0..100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := decision.New(tt.ev, l, configWith(tt.cfg), logr.Discard())
			if tt.wantNew != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantNew) {
					t.Fatalf("New error = %v, want %q", err, tt.wantNew)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = d.Decide(context.Background(), decision.Request{Pod: tt.pod})
			if err == nil || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Errorf("Decide error = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// TestFitsWithoutUnconfirmed: a pod denied because of reservations no
// replica has recorded is marked as fitting without them (its review may
// wait for them to end); one that does not fit even then, or that only
// recorded reservations block, is not.
func TestFitsWithoutUnconfirmed(t *testing.T) {
	e := engine(t)
	quota := testquota.New("team-a", "q", map[string]string{"limits.nvidia.com/gpumem": "10240"})
	for _, tt := range []struct {
		name        string
		reserved    []reservation.Reservation
		need        int64
		allowed     bool
		fitsWithout bool
	}{
		{"fits", []reservation.Reservation{{UID: "g", Name: "g", Demand: nv(1, 4096, 0), Unconfirmed: true}}, 4096, true, false},
		{"an unconfirmed reservation blocks it", []reservation.Reservation{{UID: "g", Name: "g", Demand: nv(1, 8192, 0), Unconfirmed: true}}, 4096, false, true},
		{"a recorded pod's reservation blocks it", []reservation.Reservation{{UID: "r", Name: "r", Demand: nv(1, 8192, 0)}}, 4096, false, false},
		{"too large even without them", []reservation.Reservation{{UID: "g", Name: "g", Demand: nv(1, 8192, 0), Unconfirmed: true}}, 12288, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			testns.Known(l, "team-a")
			l.UpsertQuota(quota)
			d, err := decision.New(e, l, config.Default(), logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			pod := testpod.New("p").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(tt.need)).Build()
			got, err := d.Decide(context.Background(), decision.Request{Pod: pod, Reservations: tt.reserved})
			if err != nil {
				t.Fatal(err)
			}
			if got.Allowed != tt.allowed || got.FitsWithoutUnconfirmed != tt.fitsWithout {
				t.Fatalf("allowed %v, fits without unconfirmed %v; want %v, %v (%q)", got.Allowed, got.FitsWithoutUnconfirmed, tt.allowed, tt.fitsWithout, got.Denials)
			}
		})
	}
}
