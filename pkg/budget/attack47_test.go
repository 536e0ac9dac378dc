package budget

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// A node reports a quiet 10-hour run (one running event at t0, the next
// only at its end) as ended 1 s after it started: the replica saw it
// running until the terminal (or deleted) object came, so the run is
// counted up to then, less the tolerance at most. Also past the
// checkpoint's live-entry cap (pods without a foldedPods entry).
func TestAttackNodeShortensQuietRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods int
		fold bool
		end  func(tr *Tracker, p *corev1.Pod)
	}{
		{"terminal object", 1, false, func(tr *Tracker, p *corev1.Pod) { tr.UpsertPod(finished(p, t0, t0.Add(time.Second))) }},
		{"deleted with a terminal object", 1, false, func(tr *Tracker, p *corev1.Pod) { tr.DeletePod(finished(p, t0, t0.Add(time.Second))) }},
		{"deleted by name", 1, false, func(tr *Tracker, p *corev1.Pod) { tr.DeletePodByName(p.Namespace, p.Name) }},
		{"past the live-entry cap", maxLiveFolded + 5, true, func(tr *Tracker, p *corev1.Pod) { tr.UpsertPod(finished(p, t0, t0.Add(time.Second))) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			tr := newTracker(clk)
			b := gb("ml", "hours", monthly(), "1000000")
			tr.UpsertBudget(b)
			pods := make([]*corev1.Pod, tc.pods)
			for i := range pods {
				pods[i] = gpuPod("ml", fmt.Sprintf("p%d", i), 1, t0)
				pods[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
				tr.UpsertPod(running(pods[i], t0))
			}
			clk.SetTime(t0.Add(9 * time.Hour))
			if tc.fold {
				st, _, ok := tr.Fold(refOf(b), &gpuadmitv1.BudgetStatus{}, 1, clk.Now(), "r0")
				if !ok {
					t.Fatal("no fold")
				}
				b2 := b.DeepCopy()
				b2.Status = st
				tr.UpsertBudget(b2)
			}
			clk.SetTime(t0.Add(10 * time.Hour))
			for _, p := range pods {
				tc.end(tr, p)
			}
			got := used(t, tr, refOf(b), t0.Add(11*time.Hour))
			want := gpuMinutes(float64(len(pods)) * (10*60 - 1)) // seen until 10h, less the 1-minute tolerance
			if got < want {
				t.Errorf("used %v device-ms, want at least %v: a node shortened a run the replica saw running", got, want)
			}
		})
	}
}

// fakeSizes resolves every pod's nvidia memory against 16 GiB devices.
type fakeSizes struct{}

func (fakeSizes) PodSizes(*corev1.Pod) map[string]effective.Options {
	return map[string]effective.Options{effective.NvidiaName: {DeviceMemoryMiB: 16384}}
}

// Memory percentages and whole devices burn the memory the ledger charges
// for them (resolved against the device sizes it resolves them against),
// not nothing.
func TestAttackMemPercentBurnsMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		mib  float64
	}{
		{"percentage", testpod.New("pct").NS("ml").App("main", testpod.GPU(1), testpod.MemPct(50)).Build(), 8192},
		{"whole device", testpod.New("whole").NS("ml").App("main", testpod.GPU(1)).Build(), 16384},
		{"MiB", testpod.New("mib").NS("ml").App("main", testpod.GPU(1), testpod.Mem(1024)).Build(), 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			tr := NewTracker(Options{Families: []effective.Family{effective.Nvidia()}, Clock: clk, Sizes: fakeSizes{},
				Tolerance: time.Minute, CheckpointInterval: time.Minute})
			b := &gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "mem", Generation: 1},
				Spec: gpuadmitv1.GPUBudgetSpec{Window: monthly(), Hard: corev1.ResourceList{"nvidia.com/gpumem": resource.MustParse("100000")}}}
			tr.UpsertBudget(b)
			p := tc.pod
			p.UID, p.CreationTimestamp = "u", metav1.NewTime(t0)
			tr.UpsertPod(running(p, t0))
			clk.SetTime(t0.Add(time.Hour))
			tr.DeletePod(running(p, t0)) // a deleted pod keeps the sizes it had
			var got burn.Amount
			for _, st := range tr.All(t0.Add(2 * time.Hour)) {
				for _, r := range st.Resources {
					got = r.Used
				}
			}
			if want := burn.Amount(tc.mib * 3.6e6); got != want {
				t.Errorf("used %v MiB-ms, want %v (%v MiB for one hour)", got, want, tc.mib)
			}
		})
	}
}

// A burst of deletions within one checkpoint interval does not examine
// every tombstone on every deletion (O(tombstones × budgets) each, under
// the write lock admission's reads wait on: quadratic): each deletion
// examines the entry it ended; the checkpoint that folds them still drops
// them all.
func TestAttackDeleteBurstIsLinear(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	for i := range 20 {
		tr.UpsertBudget(gb("ml", fmt.Sprintf("b%d", i), monthly(), "1000000"))
	}
	const n = 3000
	for i := range n {
		p := gpuPod("ml", fmt.Sprintf("p%d", i), 1, t0)
		p.UID = types.UID(fmt.Sprintf("u%d", i))
		tr.UpsertPod(running(p, t0))
		clk.Step(time.Millisecond)
		tr.DeletePod(p)
	}
	tr.mu.RLock()
	checks, held := tr.checks, len(tr.tombstones)
	tr.mu.RUnlock()
	if checks > 2*n {
		t.Errorf("%d tombstone checks for %d deletions within one interval: quadratic", checks, n)
	}
	if held != n {
		t.Fatalf("%d tombstones held, want %d (none folded yet)", held, n)
	}
	clk.Step(time.Minute)
	for i := range 20 {
		ref := Ref{Kind: KindBudget, Namespace: "ml", Name: fmt.Sprintf("b%d", i)}
		st, _, ok := tr.Fold(ref, &gpuadmitv1.BudgetStatus{}, 1, clk.Now(), "r0")
		if !ok {
			t.Fatal("no fold")
		}
		b := gb("ml", ref.Name, monthly(), "1000000")
		b.Status = st
		tr.UpsertBudget(b)
	}
	tr.mu.RLock()
	held = len(tr.tombstones)
	tr.mu.RUnlock()
	if held != 0 {
		t.Errorf("%d tombstones held after every budget's checkpoint folded them", held)
	}
}

// etcdLimit is the API server's default limit on an object's size.
const etcdLimit = 1572864

// 1000 live GPU pods and 19000 deleted within one checkpoint interval in
// one budget's scope: the status the leader writes still fits the API
// server's object size limit (it could not be written before, and the
// tombstones were never released), for a calendar window and for a
// rolling window with the most buckets.
func TestAttackCheckpointFitsEtcd(t *testing.T) {
	for _, tc := range []struct {
		name string
		w    gpuadmitv1.BudgetWindow
	}{{"monthly", monthly()}, {"rolling, 500 buckets", rolling(500 * time.Hour)}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			tr := NewTracker(Options{Families: []effective.Family{effective.Nvidia()}, Clock: clk,
				Tolerance: time.Minute, CheckpointInterval: time.Minute, RollingBuckets: 500})
			b := gb("ml", "hours", tc.w, "1000000")
			b.Spec.Hard["nvidia.com/gpumem"] = resource.MustParse("1000000000")
			b.Spec.Hard["nvidia.com/gpucores"] = resource.MustParse("1000000000")
			tr.UpsertBudget(b)
			st := gpuadmitv1.BudgetStatus{}
			if tc.w.Rolling != nil { // a bucket per hour of the window, each burning every resource
				st.Checkpoint = &gpuadmitv1.BudgetCheckpoint{}
				for i := range 501 {
					st.Checkpoint.Buckets = append(st.Checkpoint.Buckets, gpuadmitv1.BudgetBucket{Start: metav1.NewTime(t0.Add(time.Duration(i-500) * time.Hour)),
						Amounts: []gpuadmitv1.BudgetAmount{{Resource: "nvidia.com/gpu", UnitMilliseconds: 123456789012}, {Resource: "nvidia.com/gpucores", UnitMilliseconds: 123456789012345}, {Resource: "nvidia.com/gpumem", UnitMilliseconds: 123456789012345}}})
				}
			}
			for i := range 20000 {
				p := testpod.New(fmt.Sprintf("p%d", i)).NS("ml").App("main", testpod.GPU(1), testpod.Mem(1024)).Build()
				p.CreationTimestamp = metav1.NewTime(t0)
				p.UID = types.UID(fmt.Sprintf("%08x-1234-5678-9abc-def012345678", i))
				tr.UpsertPod(running(p, t0))
				if i >= 1000 {
					clk.Step(time.Millisecond)
					tr.DeletePod(p)
				}
			}
			clk.SetTime(t0.Add(time.Minute))
			out, _, _ := tr.Fold(refOf(b), &st, 1, clk.Now(), "gpuadmit-7d9f8b6c5-abcde")
			o := b.DeepCopy()
			o.Status = out
			raw, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			if len(raw) > etcdLimit*9/10 {
				t.Errorf("the status is %d bytes (%d foldedPods, %d buckets): past 90%% of the API server's limit %d",
					len(raw), len(out.Checkpoint.FoldedPods), len(out.Checkpoint.Buckets), etcdLimit)
			}
		})
	}
}

// The tracker's memory burn per hour of a running pod equals what the
// ledger charges it (a percentage, a whole device, MiB), with the ledger
// itself telling the device sizes, on a node of 16 GiB devices.
func TestAttackTrackerChargeIsLedgers(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
	}{
		{"percentage", testpod.New("pct").NS("ml").App("main", testpod.GPU(1), testpod.MemPct(50)).Node("n1").Build()},
		{"whole device", testpod.New("whole").NS("ml").App("main", testpod.GPU(1)).Node("n1").Build()},
		{"two whole devices", testpod.New("two").NS("ml").App("main", testpod.GPU(2)).Node("n1").Build()},
		{"MiB", testpod.New("mib").NS("ml").App("main", testpod.GPU(1), testpod.Mem(1024)).Node("n1").Build()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			led := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
			led.UpsertNode(testnode.WithGPUs("n1", nil, 16384, 16384))
			clk := clocktesting.NewFakeClock(t0)
			tr := NewTracker(Options{Families: led.Families(), Clock: clk, Sizes: led, Tolerance: time.Minute})
			b := &gpuadmitv1.GPUBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ml", Name: "mem", Generation: 1},
				Spec: gpuadmitv1.GPUBudgetSpec{Window: monthly(), Hard: corev1.ResourceList{"nvidia.com/gpumem": resource.MustParse("100000")}}}
			tr.UpsertBudget(b)
			p := running(tc.pod, t0)
			p.UID, p.CreationTimestamp = "u", metav1.NewTime(t0)
			led.UpsertPod(p) // the ledger first, as the feed does
			tr.UpsertPod(p)
			want := led.Snapshot(nil).Namespaces["ml"].Used[effective.NvidiaName].MemMiB
			if want == 0 {
				t.Fatalf("the ledger charges no memory: %+v", led.Snapshot(nil).Namespaces["ml"])
			}
			var got burn.Amount
			for _, st := range tr.All(t0.Add(time.Hour)) {
				for _, r := range st.Resources {
					got = r.Used
				}
			}
			if got != burn.Amount(want*3_600_000) {
				t.Errorf("burned %v MiB-ms in an hour, the ledger charges %d MiB (%v MiB-ms)", got, want, want*3_600_000)
			}
		})
	}
}

// A status the API server refuses as too large (etcd's object limit) is
// written again with fewer foldedPods entries, the deleted pods' first:
// checkpoints keep being written, and the use written never falls below
// the pods' burn.
func TestAttackCheckpointTooLargeRetried(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "1000000")
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	const limit = 100
	refused := 0
	api := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&gpuadmitv1.GPUBudget{}).WithObjects(b).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			if g, ok := o.(*gpuadmitv1.GPUBudget); ok && g.Status.Checkpoint != nil && len(g.Status.Checkpoint.FoldedPods) > limit {
				refused++
				return apierrors.NewRequestEntityTooLargeError("etcdserver: request is too large")
			}
			return c.SubResource(sub).Update(ctx, o, opts...)
		}}).Build()
	tr.UpsertBudget(reread(t, api, b))
	for i := range 300 {
		p := gpuPod("ml", fmt.Sprintf("p%d", i), 1, t0)
		p.UID = types.UID(fmt.Sprintf("u%d", i))
		tr.UpsertPod(running(p, t0))
		if i >= 50 {
			clk.SetTime(t0.Add(time.Hour))
			tr.DeletePod(p)
			clk.SetTime(t0)
		}
	}
	clk.SetTime(t0.Add(time.Hour))
	if _, err := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Clock: clk}).Checkpoint(t.Context(), refOf(b)); err != nil {
		t.Fatalf("checkpoint: %v (refused %d times)", err, refused)
	}
	got, obj := statusUsed(t, api, b)
	if obj.Status.Checkpoint == nil || len(obj.Status.Checkpoint.FoldedPods) > limit {
		t.Fatalf("no checkpoint written within the limit (refused %d times)", refused)
	}
	if want := gpuHours(300); got+3600 < want {
		t.Errorf("status use %v, want at least %v", got, want)
	}
	tr.UpsertBudget(obj)
	if u := used(t, tr, refOf(b), clk.Now()); u < gpuHours(300) {
		t.Errorf("the tracker's use %v after the trimmed checkpoint, below the pods' burn", u)
	}
}

// gpuHours is n device-hours as an Amount.
func gpuHours(n float64) burn.Amount { return gpuMinutes(n * 60) }
