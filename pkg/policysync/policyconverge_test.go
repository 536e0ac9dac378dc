package policysync

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuadmit/gpuadmit/policy"
)

// slowTest runs far past a 2 s test time limit without allocating much:
// what a policy test near the 5 s limit does on a CPU loaded by a start-up.
const slowTest = "package gpuadmit.slow_test\n\ntest_slow if {\n\tevery x in numbers.range(1, 100000) {\n\t\tevery y in numbers.range(1, 100000) {\n\t\t\tx + y > 0\n\t\t}\n\t}\n}\n"

// slowOpts times the slow test out in 2 s.
var slowOpts = policy.Options{TestTimeout: 2 * time.Second}

// TestTestTimeoutIsRetried attacks a replica's load under CPU load: a set
// rejected only because its tests ran past the time limit is loaded again
// with backoff, the cluster's set by a running replica as the accepted set
// by a starting one, never given up until a ConfigMap changes.
func TestTestTimeoutIsRetried(t *testing.T) {
	t.Run("the cluster's set", func(t *testing.T) {
		kube := fake.NewClientset(policyCM())
		a := replica(t, kube, slowOpts, policyCM())
		if err := a.sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		s1 := a.engine.Status().Revision
		slow := policyCM()
		slow.Data["slow_test.rego"] = slowTest
		a.list = (&flakyLister{cms: []*corev1.ConfigMap{slow}}).list
		if err := a.sync(t.Context()); !errors.Is(err, policy.ErrTestTimeout) {
			t.Fatalf("sync = %v, want a retry on ErrTestTimeout", err)
		}
		if a.lastHash != "" || a.engine.Status().Revision != s1 {
			t.Errorf("after the timeout: revision %s (want S1 %s), last hash %q (want none: load again)", a.engine.Status().Revision, s1, a.lastHash)
		}
	})
	t.Run("the accepted set at start-up", func(t *testing.T) {
		b := replica(t, fake.NewClientset(acceptedCM(t, map[string]string{"frozen.rego": operatorRule, "slow_test.rego": slowTest}, nil)),
			slowOpts, edited(brokenRule))
		if err := b.sync(t.Context()); !errors.Is(err, policy.ErrTestTimeout) {
			t.Errorf("sync = %v, want a retry on ErrTestTimeout", err)
		}
		notReadyFor(t, b, "policy tests ran past their time limit")
	})
}
