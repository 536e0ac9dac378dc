// Package budgets_test is the integration suite of GPU-hour budgets
// (GPUBudget, GPUClusterBudget) on a real kube-apiserver and etcd
// (internal/cluster/local) with the webhook server wired by pkg/server as
// cmd/webhook wires it, its clock moved forward by the test (simulated
// time: the wall clock plus an offset the test steps): a namespace with a
// budget of 1 GPU-hour runs a pod (its status written as the kubelet
// would) until the budget is spent, with warnings at 80 % and 95 % on
// admissions and the threshold Events, then the next GPU pod is denied
// with the window's end in the message; a pod whose activeDeadlineSeconds
// would take a budget past what is left is denied up front; a pod that
// asks for no GPU, and a GPU pod of a namespace without a budget, are
// unaffected; a GPUClusterBudget over two namespaces is spent by both.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package budgets_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// simulated is the wall clock moved forward by an offset the test steps;
// its timers and tickers are the wall clock's.
type simulated struct {
	clock.RealClock
	by atomic.Int64
}

func (s *simulated) Now() time.Time                  { return time.Now().Add(time.Duration(s.by.Load())) }
func (s *simulated) Since(t time.Time) time.Duration { return s.Now().Sub(t) }
func (s *simulated) advance(d time.Duration)         { s.by.Add(int64(d)) }

// suite is one control plane and webhook server, its simulated clock and
// a client that keeps the admission warnings.
type suite struct {
	c     *local.Cluster
	clk   *simulated
	api   client.Client
	kube  kubernetes.Interface
	warns *warnings
}

// warnings keeps the warnings the API server relays, per request.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.msgs
	w.msgs = nil
	return out
}

var berlin = func() *time.Location {
	l, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		panic(err)
	}
	return l
}()

// TestBudgets runs every scenario on one control plane.
func TestBudgets(t *testing.T) {
	clk := &simulated{}
	// Keep the suite's simulated hours inside one month in Berlin.
	if now := time.Now().In(berlin); monthEnd(now).Sub(now) < 6*time.Hour {
		clk.advance(monthEnd(now).Sub(now) + time.Hour)
	}
	c := local.ForTestWith(t, local.Config{Manifests: "../../manifests/webhook", Clock: clk}, func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.Config.Budgets.CheckpointInterval = &metav1.Duration{Duration: time.Second}
		return &o
	})
	s := &suite{c: c, clk: clk, warns: &warnings{}}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = s.warns
	var err error
	if s.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if s.api, err = client.New(c.Config, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	t.Run("a deadline that would pass what is left is denied up front", func(t *testing.T) { s.testDeadline(ctx, t) })
	t.Run("1 GPU-hour: warned at 80 and 95 %, then spent until the window's end", func(t *testing.T) { s.testSpent(ctx, t) })
	t.Run("a GPUClusterBudget over two namespaces is spent by both", func(t *testing.T) { s.testTeam(ctx, t) })
	t.Run("a negative spec.hard is refused by the API", func(t *testing.T) { s.testNegativeHard(ctx, t) })
	t.Run("a pod naming an existing claim is denied once the budget is spent", func(t *testing.T) { s.testNamedClaim(ctx, t) })
}

// monthEnd is the start of the month after t's, in t's zone.
func monthEnd(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
}

// createBudget creates a GPUBudget of hard nvidia.com/gpu-hours a month in
// Berlin, and waits until the server's tracker holds it.
func (s *suite) createBudget(ctx context.Context, t *testing.T, ns, name, hard string) {
	t.Helper()
	b := &gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: gpuadmitv1.GPUBudgetSpec{
		Window: gpuadmitv1.BudgetWindow{Calendar: "Monthly", TimeZone: "Europe/Berlin"},
		Hard:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(hard)}}}
	if err := s.api.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	s.awaitStanding(t, ns, name, func(budget.ResourceStanding) bool { return true })
}

// awaitStanding waits until the server's tracker reports budget name to
// ns with its nvidia.com/gpu standing satisfying ok.
func (s *suite) awaitStanding(t *testing.T, ns, name string, ok func(budget.ResourceStanding) bool) budget.ResourceStanding {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		for _, st := range s.c.Server.Budgets.Standings(ns, s.clk.Now()) {
			for _, r := range st.Resources {
				if st.Name == name && r.Resource == "nvidia.com/gpu" && ok(r) {
					return r
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("budget %s of %s: the tracker's standing %+v did not reach the expected state in 20s", name, ns, s.c.Server.Budgets.Standings(ns, s.clk.Now()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// create creates pod p and returns the warnings of its admission.
func (s *suite) create(ctx context.Context, p *corev1.Pod) ([]string, error) {
	s.warns.take()
	_, err := s.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	return s.warns.take(), err
}

// run creates the one-GPU pod name in ns, admitted, and plays the
// scheduler and the kubelet: bound to node1, its container running since
// the simulated now.
func (s *suite) run(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	if _, err := s.create(ctx, creates.GPUPod(ns, name, "", 1024)); err != nil {
		t.Fatalf("pod %s/%s: %v", ns, name, err)
	}
	if err := s.c.Bind(ctx, ns, name, local.NodeName); err != nil {
		t.Fatal(err)
	}
	pods := s.c.Kube.CoreV1().Pods(ns)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: p.Spec.Containers[0].Image, Ready: true, Started: ptr.To(true),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(s.clk.Now())}}}}
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// spentPast advances the simulated clock by d and waits until the
// tracker's use of budget name reaches at least used.
func (s *suite) spentPast(t *testing.T, ns, name string, d time.Duration, used burn.Amount) {
	t.Helper()
	s.clk.advance(d)
	s.awaitStanding(t, ns, name, func(r budget.ResourceStanding) bool { return r.Used >= used })
}

func hours(h float64) burn.Amount { return burn.Amount(h * burn.MillisPerHour) }

func (s *suite) testDeadline(ctx context.Context, t *testing.T) {
	if err := s.c.Seed(ctx, "dl", "98304"); err != nil {
		t.Fatal(err)
	}
	s.createBudget(ctx, t, "dl", "dl-hours", "2")
	long := creates.GPUPod("dl", "long", "", 1024)
	long.Spec.ActiveDeadlineSeconds = ptr.To(int64(3 * 3600))
	_, err := s.create(ctx, long)
	if err == nil {
		t.Fatal("a pod that may burn 3 GPU-hours admitted against a budget of 2")
	}
	local.MustContain(t, "denial", err.Error(), `activeDeadlineSeconds 10800 lets this pod burn up to 3 nvidia.com/gpu-hours, GPUBudget "dl-hours" has 2 left until`)
	short := creates.GPUPod("dl", "short", "", 1024)
	short.Spec.ActiveDeadlineSeconds = ptr.To(int64(2 * 3600))
	if _, err := s.create(ctx, short); err != nil {
		t.Fatalf("a pod that may burn exactly the 2 GPU-hours left: %v", err)
	}
}

func (s *suite) testSpent(ctx context.Context, t *testing.T) {
	for _, ns := range []string{"ml", "other"} {
		if err := s.c.Seed(ctx, ns, "98304"); err != nil {
			t.Fatal(err)
		}
	}
	s.createBudget(ctx, t, "ml", "ml-hours", "1")
	s.run(ctx, t, "ml", "p1")
	s.spentPast(t, "ml", "ml-hours", 48*time.Minute+30*time.Second, hours(0.8))
	w, err := s.create(ctx, creates.GPUPod("ml", "at-80", "", 1024))
	if err != nil {
		t.Fatalf("at 80 %%: %v", err)
	}
	local.MustContain(t, "warnings at 80 %", strings.Join(w, "\n"), `GPUBudget "ml-hours" has used 80 % of its nvidia.com/gpu-hours`)
	s.spentPast(t, "ml", "ml-hours", 9*time.Minute, hours(0.95))
	w, err = s.create(ctx, creates.GPUPod("ml", "at-95", "", 1024))
	if err != nil {
		t.Fatalf("at 95 %%: %v", err)
	}
	local.MustContain(t, "warnings at 95 %", strings.Join(w, "\n"), `GPUBudget "ml-hours" has used 9`, `% of its nvidia.com/gpu-hours`)
	s.spentPast(t, "ml", "ml-hours", 3*time.Minute, hours(1))
	_, err = s.create(ctx, creates.GPUPod("ml", "spent", "", 1024))
	if err == nil {
		t.Fatal("a GPU pod admitted once its namespace's budget is spent")
	}
	end := monthEnd(s.clk.Now().In(berlin)).Format(time.RFC3339)
	local.MustContain(t, "denial", err.Error(), `GPUBudget "ml-hours" is spent: 1`, `of 1 nvidia.com/gpu-hours used`, "until "+end)
	cpu := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "cpu"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("1")}}}}}}
	if _, err := s.create(ctx, cpu); err != nil {
		t.Fatalf("a pod asking for no GPU in the spent namespace: %v", err)
	}
	if w, err := s.create(ctx, creates.GPUPod("other", "gpu", "", 1024)); err != nil || len(w) > 0 {
		t.Fatalf("a GPU pod of a namespace without a budget: %v, warnings %q", err, w)
	}
	s.awaitEvents(ctx, t, "ml", "ml-hours", budget.EventThreshold, "80% of the budget used", "95% of the budget used")
	s.awaitEvents(ctx, t, "ml", "ml-hours", budget.EventSpent, "denied until "+end)
}

// awaitEvents waits until the Events of reason about budget name hold
// every want.
func (s *suite) awaitEvents(ctx context.Context, t *testing.T, ns, name, reason string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := s.c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		var msgs []string
		if err == nil {
			for _, e := range list.Items {
				msgs = append(msgs, e.Message)
			}
		}
		all, missing := strings.Join(msgs, "\n"), ""
		for _, w := range want {
			if !strings.Contains(all, w) {
				missing = w
			}
		}
		if missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Events %s of %s/%s: %q missing from %q (%v)", reason, ns, name, missing, msgs, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *suite) testTeam(ctx context.Context, t *testing.T) {
	for _, ns := range []string{"team-x1", "team-x2"} {
		if err := s.c.Seed(ctx, ns, "98304"); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.c.Kube.CoreV1().Namespaces().Get(ctx, "team-x1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels = map[string]string{"team": "x"}
	if _, err := s.c.Kube.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &gpuadmitv1.GPUClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: gpuadmitv1.GPUClusterBudgetSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}, Namespaces: []string{"team-x2"},
		Window: gpuadmitv1.BudgetWindow{Rolling: &metav1.Duration{Duration: 24 * time.Hour}},
		Hard:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}
	if err := s.api.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	s.awaitStanding(t, "team-x1", "x", func(budget.ResourceStanding) bool { return true })
	s.awaitStanding(t, "team-x2", "x", func(budget.ResourceStanding) bool { return true })
	s.run(ctx, t, "team-x1", "a")
	s.run(ctx, t, "team-x2", "b")
	// Two pods of one GPU each: 31 minutes spend the team's hour.
	s.spentPast(t, "team-x1", "x", 31*time.Minute, hours(1))
	for _, ns := range []string{"team-x1", "team-x2"} {
		_, err := s.create(ctx, creates.GPUPod(ns, "more", "", 1024))
		if err == nil {
			t.Fatalf("a GPU pod admitted in %s once its team's budget is spent", ns)
		}
		local.MustContain(t, "denial in "+ns, err.Error(), `GPUClusterBudget "x" is spent`, "rolling 24h0m0s window")
	}
}

// testNegativeHard attacks a negative spec.hard (which a tracker would
// have to guess about): the API refuses it in both kinds, naming why; 0
// (nothing may burn) is accepted.
func (s *suite) testNegativeHard(ctx context.Context, t *testing.T) {
	w := gpuadmitv1.BudgetWindow{Calendar: "Monthly"}
	for _, obj := range []client.Object{
		&gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "negative"}, Spec: gpuadmitv1.GPUBudgetSpec{
			Window: w, Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), "nvidia.com/gpumem": resource.MustParse("-1")}}},
		&gpuadmitv1.GPUClusterBudget{ObjectMeta: metav1.ObjectMeta{Name: "negative"}, Spec: gpuadmitv1.GPUClusterBudgetSpec{
			Window: w, Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("-0.5")}}},
	} {
		err := s.api.Create(ctx, obj)
		if err == nil {
			t.Fatalf("%T with a negative spec.hard accepted", obj)
		}
		local.MustContain(t, "refusal", err.Error(), "spec.hard", "a negative value is refused")
	}
	zero := &gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "zero"}, Spec: gpuadmitv1.GPUBudgetSpec{
		Window: w, Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("0")}}}
	if err := s.api.Create(ctx, zero); err != nil {
		t.Fatalf("a GPUBudget of 0 refused: %v", err)
	}
	if err := s.api.Delete(ctx, zero); err != nil {
		t.Fatal(err)
	}
}
