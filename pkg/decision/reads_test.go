package decision_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/policy"
)

// wholeInput hides the engine's Prepare, so that the Decider builds the
// whole input document for every decision.
type wholeInput struct{ decision.Evaluator }

// TestPrunedInputDecidesAsTheWhole: a Decider that builds only what the
// policy set reads (policy.Reads) decides every request as one that builds
// the whole document: the same denials and warnings for random pods, with
// labels, annotations, users and namespace labels, on random clusters with
// and without quotas, under the built-in policies alone and with the
// example policy library (rules reading labels, node selectors, users,
// namespace labels, priority classes).
func TestPrunedInputDecidesAsTheWhole(t *testing.T) {
	sets := map[string]*policy.Engine{"built-in": engine(t), "examples": engine(t, policy.Dir("../../examples/policy"))}
	for name, e := range sets {
		t.Run(name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 9))
			for cluster := range 40 {
				l := newLedger()
				l.UpsertNamespace(testns.New("ns", map[string]string{"gpu-tier": []string{"gold", "silver", "bronze"}[cluster%3], "env": "dev"}))
				nodes := 1 + r.IntN(3)
				for i := range nodes {
					l.UpsertNode(testnode.WithGPUs(fmt.Sprintf("n%d", i), map[string]string{"zone": fmt.Sprint(r.IntN(3))}, 24576, 81920))
				}
				if cluster%2 == 0 {
					l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits.nvidia.com/gpumem": fmt.Sprint(cluster * 8192), "limits.nvidia.com/gpu": "4"}))
				}
				pruned, err := decision.New(e, l, config.Default(), logr.Discard())
				if err != nil {
					t.Fatal(err)
				}
				whole, err := decision.New(wholeInput{e}, l, config.Default(), logr.Discard())
				if err != nil {
					t.Fatal(err)
				}
				for i := range 10 {
					pod := randomPod(r, fmt.Sprintf("p%d", i), nodes)
					pod.Labels = map[string]string{"app": "x", "team": fmt.Sprint(r.IntN(2))}
					if r.IntN(2) == 0 {
						pod.Spec.PriorityClassName = "high"
					}
					req := decision.Request{Pod: pod, User: decision.UserInfo{Username: fmt.Sprint("u", r.IntN(3)), Groups: []string{"g"}}}
					got, err := pruned.Decide(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					want, err := whole.Decide(context.Background(), req)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(got.Denials, want.Denials) || !reflect.DeepEqual(got.Warnings, want.Warnings) || got.Allowed != want.Allowed {
						t.Fatalf("cluster %d pod %s: pruned input: %v %q %q; whole input: %v %q %q", cluster, pod.Name,
							got.Allowed, got.Denials, got.Warnings, want.Allowed, want.Denials, want.Warnings)
					}
				}
			}
		})
	}
}
