package policy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/policy"
)

// SlowTest runs far past any test time limit without allocating much: a
// test that a loaded CPU could make time out.
const SlowTest = `package gpuadmit.slow_test

test_slow if {
	every x in numbers.range(1, 100000) {
		every y in numbers.range(1, 100000) {
			x + y > 0
		}
	}
}
`

// failingTest fails on its own, whatever the CPU.
const failingTest = `package gpuadmit.failing_test

test_fails if {
	1 == 2
}
`

// TestTestTimeoutIsRetriable: a set rejected only because a test ran past
// the time limit says so (ErrTestTimeout: the caller retries, the CPU may
// have been loaded); a set with a test that fails on its own never does,
// even beside a slow test, and the running set stays active either way.
func TestTestTimeoutIsRetriable(t *testing.T) {
	tests := []struct {
		name      string
		modules   map[string]string
		retriable bool
	}{
		{name: "only a slow test", modules: map[string]string{"extra.rego": extraPolicy, "slow_test.rego": SlowTest}, retriable: true},
		{name: "a slow test and a failing test", modules: map[string]string{"extra.rego": extraPolicy, "slow_test.rego": SlowTest, "failing_test.rego": failingTest}},
		{name: "a failing test", modules: map[string]string{"extra.rego": extraPolicy, "failing_test.rego": failingTest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := policy.New(policy.Options{TestTimeout: 2 * time.Second})
			if err := e.Load(t.Context()); err != nil {
				t.Fatal(err)
			}
			good := e.Status().Revision
			err := e.Load(t.Context(), policy.Map("override", tt.modules))
			if err == nil {
				t.Fatal("the set was activated")
			}
			if got := errors.Is(err, policy.ErrTestTimeout); got != tt.retriable {
				t.Errorf("Load = %v: ErrTestTimeout %v, want %v", err, got, tt.retriable)
			}
			if rev := e.Status().Revision; rev != good {
				t.Errorf("revision %s active after a rejected load, want %s", rev, good)
			}
		})
	}
}
