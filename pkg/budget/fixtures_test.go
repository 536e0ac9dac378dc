package budget

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// t0 is the tests' epoch: a Monday, midnight UTC, the first of a month.
var t0 = time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)

// gpuMinutes is n device-minutes as an Amount.
func gpuMinutes(n float64) burn.Amount { return burn.Amount(n * 60_000) }

func newTracker(clk *clocktesting.FakeClock) *Tracker {
	return NewTracker(Options{Families: []effective.Family{effective.Nvidia()}, Clock: clk,
		Tolerance: time.Minute, CheckpointInterval: time.Minute, RollingBuckets: 4})
}

// gpuPod is a pending pod of namespace ns with one app container using
// gpus devices, created at created.
func gpuPod(ns, name string, gpus int64, created time.Time) *corev1.Pod {
	p := testpod.New(name).NS(ns).App("main", testpod.GPU(gpus)).Build()
	p.CreationTimestamp = metav1.NewTime(created)
	return p
}

// running is p with its app container running since started.
func running(p *corev1.Pod, started time.Time) *corev1.Pod {
	q := p.DeepCopy()
	q.Status.Phase = corev1.PodRunning
	q.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}
	return q
}

// finished is p succeeded: its app container ran from started to ended.
func finished(p *corev1.Pod, started, ended time.Time) *corev1.Pod {
	q := p.DeepCopy()
	q.Status.Phase = corev1.PodSucceeded
	q.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(ended)}}}}
	return q
}

// gb is a GPUBudget of namespace ns limiting nvidia.com/gpu to hours.
func gb(ns, name string, w gpuadmitv1.BudgetWindow, hours string) *gpuadmitv1.GPUBudget {
	return &gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: gpuadmitv1.GPUBudgetSpec{Window: w, Hard: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(hours)}}}
}

func monthly() gpuadmitv1.BudgetWindow {
	return gpuadmitv1.BudgetWindow{Calendar: gpuadmitv1.WindowMonthly}
}

func rolling(d time.Duration) gpuadmitv1.BudgetWindow {
	return gpuadmitv1.BudgetWindow{Rolling: &metav1.Duration{Duration: d}}
}

// used is the tracker's use of nvidia.com/gpu in the standing of ref at now.
func used(t *testing.T, tr *Tracker, ref Ref, now time.Time) burn.Amount {
	t.Helper()
	for _, st := range tr.All(now) {
		if st.Kind == ref.Kind && st.Namespace == ref.Namespace && st.Name == ref.Name {
			for _, r := range st.Resources {
				if r.Resource == "nvidia.com/gpu" {
					return r.Used
				}
			}
		}
	}
	t.Fatalf("no standing of %v", ref)
	return 0
}

func refOf(b *gpuadmitv1.GPUBudget) Ref {
	return Ref{Kind: KindBudget, Namespace: b.Namespace, Name: b.Name}
}

// fakeAPI is a fake API server holding budgets with a status subresource.
func fakeAPI(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&gpuadmitv1.GPUBudget{}, &gpuadmitv1.GPUClusterBudget{}).
		WithObjects(objs...).Build()
}

// statusUsed reads the nvidia.com/gpu use a budget's status holds.
func statusUsed(t *testing.T, c client.Client, b *gpuadmitv1.GPUBudget) (burn.Amount, *gpuadmitv1.GPUBudget) {
	t.Helper()
	got := &gpuadmitv1.GPUBudget{}
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, got); err != nil {
		t.Fatal(err)
	}
	for _, r := range got.Status.Resources {
		if r.Resource == "nvidia.com/gpu" {
			return burn.Amount(r.Used.MilliValue() * (burn.MillisPerHour / 1000)), got
		}
	}
	return 0, got
}

// recount is what pods running over [start, end) intervals burn in
// [from, to), in device-milliseconds: the truth from the pods' own
// timestamps.
type run struct {
	gpus       int64
	start, end time.Time // end zero: still running
}

func recount(runs []run, from, to time.Time) burn.Amount {
	var sum burn.Amount
	for _, r := range runs {
		s, e := maxTime(r.start, from), to
		if !r.end.IsZero() {
			e = minTime(r.end, to)
		}
		if e.After(s) {
			sum += burn.Amount(r.gpus * (e.UnixMilli() - s.UnixMilli()))
		}
	}
	return sum
}

type apiClient = client.Client

func b100() resource.Quantity { return resource.MustParse("100") }

func clientKey(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
