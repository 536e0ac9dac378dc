package policysync

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

const frozenDenial = "namespace frozen: GPU pods are frozen"

// brokenRule does not compile: the edit the running replicas reject.
const brokenRule = "package gpuadmit.admission\n\ndeny contains if {\n"

// replica is one replica's policy sync over the shared API server kube,
// listing cms.
func replica(t *testing.T, kube kubernetes.Interface, opts policy.Options, cms ...*corev1.ConfigMap) *Sync {
	t.Helper()
	pm, err := newPolicyMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	l := &flakyLister{cms: cms}
	return &Sync{kube: kube, engine: policy.New(opts), namespace: "gpuadmit-system", selector: "x=y",
		log: logr.Discard(), metrics: pm, clock: clocktesting.NewFakeClock(time.Now()), list: l.list, retryMin: 10 * time.Millisecond, retryMax: 40 * time.Millisecond}
}

// edited is the operator's policy ConfigMap with its frozen.rego replaced.
func edited(rule string) *corev1.ConfigMap {
	cm := policyCM()
	cm.Data["frozen.rego"] = rule
	return cm
}

// denies evaluates the replica's active set for a pod of namespace ns.
func denies(t *testing.T, p *Sync, ns string) []string {
	t.Helper()
	out, err := p.engine.(*policy.Engine).Eval(t.Context(), ast.MustParseTerm(`{"namespace": "`+ns+`"}`).Value)
	if err != nil {
		t.Fatalf("evaluating: %v", err)
	}
	return out.Deny
}

// TestStartingReplicaRunsTheAcceptedSet attacks a start-up during a broken
// policy edit: replica A accepted S1 (the operator's deny rule); the
// ConfigMap is edited to S2, which does not compile; replica B starts. B
// must run S1, as A does, never the built-in policies alone.
func TestStartingReplicaRunsTheAcceptedSet(t *testing.T) {
	ctx := t.Context()
	kube := fake.NewClientset(policyCM())
	a := replica(t, kube, policy.Options{}, policyCM())
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	s1 := a.engine.Status().Revision
	if got := denies(t, a, "frozen"); !strings.Contains(strings.Join(got, "\n"), frozenDenial) {
		t.Fatalf("S1 does not deny on A: %q", got)
	}
	broken := edited(brokenRule)
	if _, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Update(ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.list = (&flakyLister{cms: []*corev1.ConfigMap{broken}}).list
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if rev := a.engine.Status().Revision; rev != s1 {
		t.Fatalf("A left S1 (%s) for %s after a broken edit", s1, rev)
	}

	b := replica(t, kube, policy.Options{}, edited(brokenRule))
	if err := b.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := denies(t, b, "frozen"); !strings.Contains(strings.Join(got, "\n"), frozenDenial) {
		t.Errorf("B does not run the operator's deny rule: deny %q, modules %q", got, b.engine.Status().Modules)
	}
	if rev := b.engine.Status().Revision; rev != s1 {
		t.Errorf("B runs revision %s, A runs %s: the replicas disagree", rev, s1)
	}
	if st := b.engine.Status(); !strings.HasPrefix(st.LastError, "the cluster's policy set was rejected (") {
		t.Errorf("last error %q: the rejection of the cluster's set is not reported (gpuadmit_policy_last_load_failed)", st.LastError)
	}
	if n := testutil.ToFloat64(b.metrics.reloads.WithLabelValues("accepted-set-activated")); n != 1 {
		t.Errorf("accepted-set-activated count %v, want 1", n)
	}
	got, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Get(ctx, "team-policy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := got.Annotations[StatusAnnotation]; !strings.HasPrefix(st, "rejected: ") || !strings.Contains(st, "(the accepted set, ConfigMap gpuadmit-policy-accepted)") {
		t.Errorf("status annotation %q does not say B runs the accepted set", st)
	}
}

// TestStartingReplicaWithoutAcceptedSetIsNotReady: with no accepted set (the
// ConfigMap absent, or as the chart creates it, empty) and the cluster's
// set rejected, a starting replica activates nothing and says why.
func TestStartingReplicaWithoutAcceptedSetIsNotReady(t *testing.T) {
	empty := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policysource.AcceptedConfigMap, Namespace: "gpuadmit-system"}}
	for name, kube := range map[string]*fake.Clientset{"absent": fake.NewClientset(), "empty": fake.NewClientset(empty)} {
		t.Run(name, func(t *testing.T) {
			b := replica(t, kube, policy.Options{}, edited(brokenRule))
			if err := b.sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			notReadyFor(t, b, "no accepted policy set is stored")
		})
	}
}

// notReadyFor asserts that p activated nothing and that the engine's last
// error (the readiness check's body: "no policy set is active (last
// error: ...)") says why, with reason.
func notReadyFor(t *testing.T, p *Sync, reason string) {
	t.Helper()
	st := p.engine.Status()
	if st.Revision != "" {
		t.Fatalf("revision %s is active (modules %q); want none", st.Revision, st.Modules)
	}
	for _, want := range []string{"no policy set is active, so this replica is not ready: the cluster's policy set was rejected (",
		"configmap gpuadmit-system/team-policy/frozen.rego", reason} {
		if !strings.Contains(st.LastError, want) {
			t.Errorf("last error %q does not say %q", st.LastError, want)
		}
	}
	if n := testutil.ToFloat64(p.metrics.reloads.WithLabelValues("refused")); n < 1 {
		t.Errorf("refused count %v, want at least 1", n)
	}
	if _, err := p.engine.(*policy.Engine).Eval(t.Context(), ast.MustParseTerm(`{}`).Value); !errors.Is(err, policy.ErrNoPolicy) {
		t.Errorf("evaluation %v, want ErrNoPolicy", err)
	}
}

// acceptedCM is the accepted ConfigMap holding modules as the operator's
// team-policy source, its digest recomputed (as whoever edits it by hand
// can), then edit applied to its data.
func acceptedCM(t *testing.T, modules map[string]string, edit func(map[string]string)) *corev1.ConfigMap {
	t.Helper()
	snap := policysource.Snapshot{Sources: []policysource.SnapshotSource{{Name: "configmap gpuadmit-system/team-policy", Modules: modules}}}
	data, err := snap.Data("0123456789ab")
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(data)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policysource.AcceptedConfigMap, Namespace: "gpuadmit-system"}, Data: data}
}

// hungryTest allocates ~200 MiB of live heap in a policy test.
const hungryTest = `package gpuadmit.hungry_test

test_hungry if {
	count(numbers.range(1, 2000000)) > 0
}
`

// TestHandEditedAcceptedSetIsNotActivated attacks the accepted ConfigMap,
// which administrators of gpuadmit's namespace can edit like the policy
// ConfigMaps: what it holds is compiled and tested before it is
// activated, and a set that fails leaves the replica unready, never on
// the built-in policies alone.
func TestHandEditedAcceptedSetIsNotActivated(t *testing.T) {
	failingTest := "package gpuadmit.frozen_test\n\nimport data.gpuadmit.admission\n\ntest_frozen if {\n\t\"x\" in admission.deny with input as {\"namespace\": \"frozen\"}\n}\n"
	tests := []struct {
		name   string
		cm     *corev1.ConfigMap
		reason string
		retry  bool
	}{
		{name: "a policy that does not compile", cm: acceptedCM(t, map[string]string{"frozen.rego": brokenRule}, nil),
			reason: "accepted configmap gpuadmit-system/team-policy/frozen.rego:4"},
		{name: "a policy whose test fails", cm: acceptedCM(t, map[string]string{"frozen.rego": operatorRule, "frozen_test.rego": failingTest}, nil),
			reason: "policy tests failed: data.gpuadmit.frozen_test.test_frozen"},
		{name: "a test past the memory budget", cm: acceptedCM(t, map[string]string{"frozen.rego": operatorRule, "hungry_test.rego": hungryTest}, nil),
			reason: "policy tests exceeded the memory budget", retry: true},
		{name: "sources edited without their digest", cm: acceptedCM(t, map[string]string{"frozen.rego": operatorRule}, func(d map[string]string) {
			d[policysource.AcceptedSourcesKey] = strings.Replace(d[policysource.AcceptedSourcesKey], "frozen", "thawed", 1)
		}), reason: "(edited by hand?)"},
		{name: "not JSON", cm: acceptedCM(t, nil, func(d map[string]string) { d[policysource.AcceptedSourcesKey] = "{" }),
			reason: "sources.json: unexpected EOF"},
		{name: "an unknown field", cm: acceptedCM(t, nil, func(d map[string]string) { d[policysource.AcceptedSourcesKey] = `{"sources":[],"allow":true}` }),
			reason: `unknown field "allow"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := replica(t, fake.NewClientset(tt.cm), policy.Options{MemoryBudget: 16 << 20, TestTimeout: 30 * time.Second}, edited(brokenRule))
			err := b.sync(t.Context())
			if tt.retry != (err != nil) {
				t.Errorf("sync = %v; want a retry: %v", err, tt.retry)
			}
			notReadyFor(t, b, tt.reason)
		})
	}
}

// TestHungryEditKeepsTheRunningSet: an edit adding a policy test that
// allocates ~200 MiB is rejected on the memory budget; the running replica
// keeps S1, the accepted set stays S1, and the load is retried (the heap's
// growth could have been another part's).
func TestHungryEditKeepsTheRunningSet(t *testing.T) {
	ctx := t.Context()
	kube := fake.NewClientset(policyCM())
	a := replica(t, kube, policy.Options{MemoryBudget: 16 << 20, TestTimeout: 30 * time.Second}, policyCM())
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	s1 := a.engine.Status().Revision
	stored, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Get(ctx, policysource.AcceptedConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the accepted set was not stored: %v", err)
	}
	hungry := policyCM()
	hungry.Data["hungry_test.rego"] = hungryTest
	a.list = (&flakyLister{cms: []*corev1.ConfigMap{hungry}}).list
	if err := a.sync(ctx); !errors.Is(err, policy.ErrMemoryBudget) {
		t.Fatalf("sync = %v, want a retry on ErrMemoryBudget", err)
	}
	if rev := a.engine.Status().Revision; rev != s1 {
		t.Errorf("revision %s active, want S1 %s", rev, s1)
	}
	if got := denies(t, a, "frozen"); !strings.Contains(strings.Join(got, "\n"), frozenDenial) {
		t.Errorf("S1 no longer denies: %q", got)
	}
	after, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Get(ctx, policysource.AcceptedConfigMap, metav1.GetOptions{})
	if err != nil || after.Data[policysource.AcceptedDigestKey] != stored.Data[policysource.AcceptedDigestKey] {
		t.Errorf("the accepted set changed: %v", err)
	}
	if a.lastHash != "" {
		t.Error("the rejected set would not be loaded again")
	}
}

// TestAcceptedIsNeverASource: the accepted ConfigMap, even labelled as a
// policy ConfigMap and holding a module, adds nothing to the set.
func TestAcceptedIsNeverASource(t *testing.T) {
	cm := acceptedCM(t, map[string]string{"frozen.rego": operatorRule}, func(d map[string]string) {
		d["allow-nothing.rego"] = "package gpuadmit.admission\n\ndeny contains \"everything\" if true\n"
	})
	b := replica(t, fake.NewClientset(cm), policy.Options{}, cm)
	if err := b.sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := denies(t, b, "team-a"); len(got) != 0 {
		t.Errorf("the accepted ConfigMap was loaded as a source: deny %q", got)
	}
}

// TestUnreadableDirectoryActivatesNothing: a policy directory that cannot be
// read is a read error (retried), never a rejection that would fall back:
// nothing is activated and the readiness body names the directory.
func TestUnreadableDirectoryActivatesNothing(t *testing.T) {
	b := replica(t, fake.NewClientset(), policy.Options{}, policyCM())
	b.dir = "/nonexistent/policies"
	if err := b.sync(t.Context()); !errors.Is(err, policy.ErrRead) {
		t.Fatalf("sync = %v, want a read error", err)
	}
	if st := b.engine.Status(); st.Revision != "" || !strings.Contains(st.LastError, "source /nonexistent/policies: policy directory") {
		t.Errorf("status %+v, want nothing active and the directory named", st)
	}
	if n := testutil.ToFloat64(b.metrics.reloads.WithLabelValues("refused")); n != 0 {
		t.Errorf("a read error fell back to the accepted set (%v refusals)", n)
	}
}
