package policy_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/policy"
)

// hungryTest builds a two-million-element array in a policy test: about
// 200 MiB of live heap without a memory bound.
const hungryTest = `package gpuadmit.hungry_test

test_hungry if {
	count(numbers.range(1, 2000000)) > 0
}
`

// heapPeak samples the heap's objects every millisecond until stop and
// returns the largest growth over the live heap at its start.
func heapPeak(stop <-chan struct{}) (peak func() uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var most atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base && v-base > most.Load() {
				most.Store(v - base)
			}
		}
	}()
	return func() uint64 { <-done; return most.Load() }
}

// TestPolicyTestMemoryBudget attacks the test-then-activate path with a
// policy test that allocates ~200 MiB: the set is rejected with a message
// naming the budget and the test, the heap stays near the budget, and the
// running set stays active.
func TestPolicyTestMemoryBudget(t *testing.T) {
	const budget = 16 << 20
	e := policy.New(policy.Options{MemoryBudget: budget, TestTimeout: 30 * time.Second})
	ctx := context.Background()
	if err := e.Load(ctx, policy.Map("override", map[string]string{"extra.rego": extraPolicy, "extra_test.rego": extraPolicyTest})); err != nil {
		t.Fatal(err)
	}
	good := e.Status()
	stop := make(chan struct{})
	peak := heapPeak(stop)
	err := e.Load(ctx, policy.Map("override", map[string]string{"extra.rego": extraPolicy, "hungry_test.rego": hungryTest}))
	close(stop)
	grew := peak()
	if !errors.Is(err, policy.ErrMemoryBudget) {
		t.Fatalf("Load = %v, want ErrMemoryBudget", err)
	}
	for _, want := range []string{"over the budget of 16.0 MiB", "data.gpuadmit.hungry_test.test_hungry"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// Forced collections keep the heap's objects under the live heap plus
	// the budget, the live heap under the start plus the budget, plus what
	// one poll lets through.
	if limit := uint64(3*budget + 16<<20); grew > limit {
		t.Errorf("the heap grew by %d MiB during the rejected load, want at most %d MiB", grew>>20, limit>>20)
	}
	t.Logf("heap growth during the rejected load: %d MiB", grew>>20)
	st := e.Status()
	if st.Revision != good.Revision || st.Failures != 1 {
		t.Errorf("status after the rejected load %+v, want revision %s still active", st, good.Revision)
	}
	out, err := e.Eval(ctx, input(t, "forbidden"))
	if err != nil || !strings.Contains(strings.Join(out.Deny, "\n"), "no pods named forbidden") {
		t.Errorf("the running set no longer answers: %v, %v", out.Deny, err)
	}
}

// hungryRule builds a two-million-element array for pods named "hungry";
// its test never takes that path, so the set loads.
const hungryRule = `package gpuadmit.admission

deny contains "hungry" if {
	input.pod.name == "hungry"
	count(numbers.range(1, 2000000)) > 0
}
`

// TestEvalMemoryBudget attacks evaluation: a rule that allocates ~200 MiB
// for one input is stopped near the budget with an error naming it, and
// the next evaluation answers.
func TestEvalMemoryBudget(t *testing.T) {
	const budget = 16 << 20
	e := policy.New(policy.Options{MemoryBudget: budget, EvalTimeout: 30 * time.Second})
	ctx := context.Background()
	if err := e.Load(ctx, policy.Map("override", map[string]string{"hungry.rego": hungryRule})); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	peak := heapPeak(stop)
	_, err := e.Eval(ctx, input(t, "hungry"))
	close(stop)
	grew := peak()
	if !errors.Is(err, policy.ErrEvalMemoryBudget) || !strings.Contains(err.Error(), "over the budget of 16.0 MiB") {
		t.Fatalf("Eval = %v, want ErrEvalMemoryBudget naming the budget", err)
	}
	if limit := uint64(3*budget + 16<<20); grew > limit {
		t.Errorf("the heap grew by %d MiB during the evaluation, want at most %d MiB", grew>>20, limit>>20)
	}
	t.Logf("heap growth during the stopped evaluation: %d MiB", grew>>20)
	if out, err := e.Eval(ctx, input(t, "forbidden")); err != nil || len(out.Deny) != 1 {
		t.Errorf("the next evaluation: %v, %v", out.Deny, err)
	}
}
