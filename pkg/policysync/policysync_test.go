package policysync

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/policy"
)

const operatorRule = `package gpuadmit.admission

deny contains "namespace frozen: GPU pods are frozen" if input.namespace == "frozen"
`

// flakyLister is a ConfigMap list that fails while failing is set. The API
// server's informer lister does not fail on demand, so this is the one
// place the failure can be produced.
type flakyLister struct {
	mu      sync.Mutex
	failing int // failures left
	calls   int
	cms     []*corev1.ConfigMap
}

func (f *flakyLister) list() ([]*corev1.ConfigMap, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.failing > 0 {
		f.failing--
		return nil, errors.New("the server was unable to return a response in the time allotted")
	}
	return f.cms, nil
}

func (f *flakyLister) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newSync(t *testing.T, l *flakyLister, cms ...*corev1.ConfigMap) (*Sync, *fake.Clientset) {
	t.Helper()
	objs := make([]runtime.Object, 0, len(cms))
	for _, cm := range cms {
		objs = append(objs, cm)
	}
	kube := fake.NewClientset(objs...)
	pm, err := newPolicyMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	return &Sync{kube: kube, engine: policy.New(policy.Options{}), namespace: "gpuadmit-system", selector: "x=y",
		log: logr.Discard(), metrics: pm, clock: clocktesting.NewFakeClock(time.Now()), list: l.list,
		retryMin: 10 * time.Millisecond, retryMax: 40 * time.Millisecond}, kube
}

func policyCM() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-policy", Namespace: "gpuadmit-system", Labels: map[string]string{"x": "y"}},
		Data: map[string]string{"frozen.rego": operatorRule}}
}

// TestPolicyListErrorKeepsTheActiveSet: an operator's deny rule must not
// vanish because listing the policy ConfigMaps failed once.
func TestPolicyListErrorKeepsTheActiveSet(t *testing.T) {
	cm := policyCM()
	l := &flakyLister{cms: []*corev1.ConfigMap{cm}}
	p, kube := newSync(t, l, cm)
	ctx := t.Context()
	if err := p.sync(ctx); err != nil {
		t.Fatal(err)
	}
	before := p.engine.Status()
	if !slices.ContainsFunc(before.Modules, func(m string) bool { return strings.Contains(m, "frozen.rego") }) {
		t.Fatalf("operator policy not active: %v", before.Modules)
	}
	l.failing = 1
	if err := p.sync(ctx); err == nil {
		t.Fatal("a failed list was not reported")
	}
	after := p.engine.Status()
	if after.Revision != before.Revision || !slices.Equal(after.Modules, before.Modules) {
		t.Fatalf("the active set changed after a list error: %v -> %v", before.Modules, after.Modules)
	}
	if n := testutil.ToFloat64(p.metrics.reloads.WithLabelValues("read-error")); n != 1 {
		t.Errorf("read-error count %v, want 1", n)
	}
	got, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Get(ctx, "team-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Annotations[StatusAnnotation]; !strings.HasPrefix(st, "read error: listing policy ConfigMaps") ||
		!strings.Contains(st, "still active: revision "+before.Revision) {
		t.Errorf("status annotation %q", st)
	}
}

// TestPolicyFirstListErrorActivatesNothing: before any set was active, a
// read failure must not activate the built-in set without the operator's
// rules; the read is retried with backoff until it succeeds.
func TestPolicyFirstListErrorActivatesNothing(t *testing.T) {
	cm := policyCM()
	l := &flakyLister{cms: []*corev1.ConfigMap{cm}, failing: 3}
	p, _ := newSync(t, l, cm)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := p.sync(ctx); err == nil || p.engine.Status().Revision != "" {
		t.Fatalf("after a failed first list: err %v, active revision %q; want an error and nothing active", err, p.engine.Status().Revision)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	p.clock = clk
	done := make(chan error, 1)
	go func() { done <- p.loop(ctx, nil) }()
	// Each failed read waits its backoff on the clock: step past it once
	// the loop waits, until the set is active: the loop's two failures, two
	// steps; without a step nothing is read again.
	steps := 0
	for {
		if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			return clk.HasWaiters() || p.engine.Status().Revision != "", nil
		}); err != nil {
			t.Fatalf("neither retrying nor loaded after %d steps; %d list calls", steps, l.callCount())
		}
		if p.engine.Status().Revision != "" {
			break
		}
		clk.Step(p.retryMax)
		steps++
	}
	if steps != 2 || l.callCount() != 4 {
		t.Errorf("loaded after %d clock steps and %d list calls, want 2 steps (the first failure was sync's) and 4 calls", steps, l.callCount())
	}
	if mods := p.engine.Status().Modules; !slices.ContainsFunc(mods, func(m string) bool { return strings.Contains(m, "frozen.rego") }) {
		t.Errorf("loaded without the operator's policy: %v", mods)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
