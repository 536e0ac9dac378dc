package decision_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// capturingEvaluator keeps the last input document.
type capturingEvaluator struct {
	decision.Evaluator
	last ast.Value
}

func (c *capturingEvaluator) Eval(ctx context.Context, in ast.Value) (policy.Output, error) {
	c.last = in
	return c.Evaluator.Eval(ctx, in)
}

func jsonOf(t *testing.T, v ast.Value) map[string]any {
	t.Helper()
	doc, err := ast.JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	return doc.(map[string]any)
}

// TestInputCarriesThePodTheNamespaceAndTheUser: the fields policy authors
// read (docs/policy-input.md) come from the pod, the namespace watch and
// the AdmissionReview's userInfo; empty ones are present and empty.
func TestInputCarriesThePodTheNamespaceAndTheUser(t *testing.T) {
	l := newLedger()
	l.UpsertNamespace(testns.New("team-a", map[string]string{"gpu-tier": "bronze"}))
	testns.Known(l, "team-b")
	ev := &capturingEvaluator{Evaluator: engine(t)}
	d, err := decision.New(ev, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	full := testpod.New("train").NS("team-a").Label("cost-center", "42").Annotate("note", "x").
		NodeSelector("nvidia.com/gpu.product", "NVIDIA-H200").App("c", testpod.GPU(1)).Build()
	rc := "nvidia"
	full.Spec.PriorityClassName, full.Spec.RuntimeClassName, full.Spec.SchedulerName = "high", &rc, "hami-scheduler"
	bare := testpod.New("bare").NS("team-b").App("c", testpod.GPU(1)).Build()
	tests := []struct {
		name string
		req  decision.Request
		want map[string]any
	}{
		{name: "everything set", req: decision.Request{Pod: full, User: decision.UserInfo{Username: "alice", Groups: []string{"ml-leads", "system:authenticated"}}},
			want: map[string]any{
				"namespaceLabels": map[string]any{"gpu-tier": "bronze"},
				"userInfo":        map[string]any{"username": "alice", "groups": []any{"ml-leads", "system:authenticated"}},
				"pod": map[string]any{"name": "train", "generateName": "", "uid": "uid-team-a-train", "labels": map[string]any{"cost-center": "42"},
					"annotations": map[string]any{"note": "x"}, "nodeSelector": map[string]any{"nvidia.com/gpu.product": "NVIDIA-H200"},
					"priorityClassName": "high", "runtimeClassName": "nvidia", "schedulerName": "hami-scheduler"},
			}},
		{name: "nothing set: empty, never absent", req: decision.Request{Pod: bare},
			want: map[string]any{
				"namespaceLabels": map[string]any{},
				"userInfo":        map[string]any{"username": "", "groups": []any{}},
				"pod": map[string]any{"name": "bare", "generateName": "", "uid": "uid-team-b-bare", "labels": map[string]any{},
					"annotations": map[string]any{}, "nodeSelector": map[string]any{},
					"priorityClassName": "", "runtimeClassName": "", "schedulerName": ""},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := d.Decide(context.Background(), tt.req); err != nil {
				t.Fatal(err)
			}
			doc := jsonOf(t, ev.last)
			for k, want := range tt.want {
				if !reflect.DeepEqual(doc[k], want) {
					t.Errorf("input.%s = %#v, want %#v", k, doc[k], want)
				}
			}
		})
	}
}

// TestInputMatchesItsSchema: the input document of random pods on random
// clusters (with and without quotas, labels, users) is valid against the
// JSON Schema the policies are type-checked with, so a policy that compiles
// reads fields that exist.
func TestInputMatchesItsSchema(t *testing.T) {
	var schema any
	if err := util.Unmarshal(policy.InputSchema(), &schema); err != nil {
		t.Fatal(err)
	}
	st, err := ast.InterfaceToValue(schema)
	if err != nil {
		t.Fatal(err)
	}
	check, err := rego.New(rego.Query(fmt.Sprintf("[ok, errors] := json.match_schema(input, %v)", st))).PrepareForEval(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ev := &capturingEvaluator{Evaluator: engine(t)}
	r := rand.New(rand.NewPCG(3, 5))
	for cluster := range 30 {
		l := newLedger()
		l.UpsertNamespace(testns.New("ns", map[string]string{"tier": fmt.Sprint(cluster % 3)}))
		nodes := r.IntN(3)
		for i := range nodes {
			l.UpsertNode(testnode.WithGPUs(fmt.Sprintf("n%d", i), map[string]string{"zone": fmt.Sprint(r.IntN(3))}, 24576, 81920))
		}
		if cluster%2 == 0 {
			l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": fmt.Sprint(cluster * 4096), "limits.nvidia.com/gpucores": "100"}))
		}
		d, err := decision.New(ev, l, config.Default(), logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			pod := randomPod(r, fmt.Sprintf("p%d", i), max(nodes, 1))
			pod.Labels = map[string]string{"app": "x"}
			user := decision.UserInfo{Username: "u", Groups: []string{"g"}}
			if _, err := d.Decide(context.Background(), decision.Request{Pod: pod, User: user}); err != nil {
				t.Fatal(err)
			}
			rs, err := check.Eval(context.Background(), rego.EvalParsedInput(ev.last))
			if err != nil || len(rs) != 1 {
				t.Fatalf("schema check: %v %v", rs, err)
			}
			if ok := rs[0].Bindings["ok"]; ok != true {
				t.Fatalf("cluster %d pod %s: input does not match its schema: %v\ninput: %v", cluster, pod.Name, rs[0].Bindings["errors"], ev.last)
			}
		}
	}
}

// TestNamespaceNotYetSeen: a pod in a namespace the watch has not
// reported waits for it (woken when the watch reports it), and gets no
// decision (an error, so the API server applies the failure policy) when it
// never comes: deciding with no labels could admit what a label-based rule
// denies.
func TestNamespaceNotYetSeen(t *testing.T) {
	pod := testpod.New("p").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(1024)).Build()
	t.Run("seen a moment later", func(t *testing.T) {
		l := newLedger()
		waiting := &waitSignal{Ledger: l, waiting: make(chan struct{})}
		d, err := decision.New(engine(t), waiting, config.Default(), logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			<-waiting.waiting // the decision waits for the namespace: the watch reports it now
			testns.Known(l, "team-a")
		}()
		if res, err := d.Decide(context.Background(), decision.Request{Pod: pod}); err != nil || !res.Allowed {
			t.Fatalf("decision %+v, %v", res, err)
		}
	})
	t.Run("never seen", func(t *testing.T) {
		l := newLedger()
		d, err := decision.New(engine(t), l, config.Default(), logr.Discard())
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		res, err := d.Decide(ctx, decision.Request{Pod: pod})
		if !errors.Is(err, decision.ErrNamespaceUnknown) || res.Allowed {
			t.Fatalf("decision %+v, error %v; want ErrNamespaceUnknown", res, err)
		}
	})
}

// waitSignal is a ledger that closes waiting when a decision starts waiting
// for a namespace.
type waitSignal struct {
	*ledger.Ledger
	waiting chan struct{}
	once    sync.Once
}

func (w *waitSignal) WaitForNamespace(ctx context.Context, ns string) error {
	w.once.Do(func() { close(w.waiting) })
	return w.Ledger.WaitForNamespace(ctx, ns)
}
