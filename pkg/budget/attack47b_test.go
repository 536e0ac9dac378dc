package budget

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// limitedAPI is a fake API server refusing a status with more than limit
// foldedPods entries as too large (limit < 0: none).
func limitedAPI(t *testing.T, limit int, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&gpuadmitv1.GPUBudget{}).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			if g, ok := o.(*gpuadmitv1.GPUBudget); ok && limit >= 0 && g.Status.Checkpoint != nil && len(g.Status.Checkpoint.FoldedPods) > limit {
				return apierrors.NewRequestEntityTooLargeError("etcdserver: request is too large")
			}
			return c.SubResource(sub).Update(ctx, o, opts...)
		}}).Build()
}

// checkpointsStayAtRecount runs checkpoints 1..n one minute apart from
// first, the tracker reading each status written, and asserts both the
// status's use and the tracker's stay within [recount, recount + slack]
// at every one: a dropped foldedPods entry never counts a pod again.
func checkpointsStayAtRecount(t *testing.T, tr *Tracker, clk *clocktesting.FakeClock, api client.Client, b *gpuadmitv1.GPUBudget,
	first time.Time, n int, want func(time.Time) burn.Amount, slack burn.Amount, wantErr error) {
	t.Helper()
	cp := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Clock: clk})
	h := func(a burn.Amount) float64 { return float64(a) / 3.6e6 }
	for k := range n {
		at := first.Add(time.Duration(k) * time.Minute)
		clk.SetTime(at)
		_, err := cp.Checkpoint(t.Context(), refOf(b))
		if !errors.Is(err, wantErr) {
			t.Fatalf("checkpoint %d: %v, want %v", k+1, err, wantErr)
		}
		got, obj := statusUsed(t, api, b)
		tr.UpsertBudget(obj)
		u, w := used(t, tr, refOf(b), at), want(at)
		t.Logf("checkpoint %d: status %.2f h, tracker %.2f h, recount %.2f h, tombstones %d", k+1, h(got), h(u), h(w), len(tr.tombstones))
		if wantErr == nil && (got > w+slack || got+gpuMinutes(1) < w) {
			t.Errorf("checkpoint %d: status use %.2f h, the pods burned %.2f h", k+1, h(got), h(w))
		}
		if u > w+slack || u < w {
			t.Errorf("checkpoint %d: tracker use %.2f h, the pods burned %.2f h", k+1, h(u), h(w))
		}
	}
}

// The API server refuses the status until the trim drops deleted pods'
// entries: at every later checkpoint the trimmed pods stay folded once
// (their tombstones released), never counted again; live pods' entries
// are never trimmed (300 live pods over the limit: the write fails, the
// tracker keeps counting them from their timestamps).
func TestAttackTrimmedCheckpointNeverRecounts(t *testing.T) {
	for _, tc := range []struct {
		name          string
		live, deleted int
		wantErr       error
	}{
		{name: "deleted pods trimmed", deleted: 300},
		{name: "live and deleted", live: 60, deleted: 300},
		{name: "live pods over the limit", live: 300, wantErr: errTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			tr := newTracker(clk)
			b := gb("ml", "hours", monthly(), "1000000")
			api := limitedAPI(t, 100, b)
			tr.UpsertBudget(reread(t, api, b))
			for i := range tc.live + tc.deleted {
				p := gpuPod("ml", fmt.Sprintf("p%d", i), 1, t0)
				p.UID = types.UID(fmt.Sprintf("u%d", i))
				tr.UpsertPod(running(p, t0))
				if i >= tc.live {
					clk.SetTime(t0.Add(time.Hour))
					tr.DeletePod(p) // ran 1 h, deleted
					clk.SetTime(t0)
				}
			}
			want := func(at time.Time) burn.Amount {
				return recount([]run{{gpus: int64(tc.live), start: t0}, {gpus: int64(tc.deleted), start: t0, end: t0.Add(time.Hour)}}, t0, at)
			}
			checkpointsStayAtRecount(t, tr, clk, api, b, t0.Add(time.Hour+time.Minute), 6, want, gpuMinutes(float64(tc.live+tc.deleted)/60), tc.wantErr)
			if tc.wantErr == nil && len(tr.tombstones) != 0 {
				t.Errorf("%d tombstones still held after the checkpoints folded them", len(tr.tombstones))
			}
		})
	}
}

// 8000 live pods with entries (maxLiveFolded) and 5000 pods deleted
// within one interval: 13000 entries, past MaxFoldedPods, so the fold
// drops 1000 deleted pods' entries while this replica holds their
// tombstones. No size error: the bound alone must not count them again,
// at any later checkpoint.
func TestAttackFoldedPodsCapNeverRecounts(t *testing.T) {
	if testing.Short() {
		t.Skip("13000 pods")
	}
	clk := clocktesting.NewFakeClock(t0)
	tr := newTracker(clk)
	b := gb("ml", "hours", monthly(), "100000000")
	api := limitedAPI(t, -1, b)
	tr.UpsertBudget(reread(t, api, b))
	const live, deleted = 8000, 5000
	pods := make([]*corev1.Pod, live+deleted)
	for i := range pods {
		p := gpuPod("ml", fmt.Sprintf("p%d", i), 1, t0)
		p.UID = types.UID(fmt.Sprintf("%08x-1234-5678-9abc-def012345678", i))
		pods[i] = p
		if i < live {
			tr.UpsertPod(running(p, t0))
		}
	}
	clk.SetTime(t0.Add(time.Minute))
	if _, err := NewCheckpointer(CheckpointerOptions{Tracker: tr, Client: api, Identity: "r", Clock: clk}).Checkpoint(t.Context(), refOf(b)); err != nil {
		t.Fatal(err)
	}
	_, obj := statusUsed(t, api, b)
	tr.UpsertBudget(obj) // 8000 live entries
	start, end := t0.Add(time.Minute), t0.Add(time.Minute+time.Hour)
	for i := live; i < live+deleted; i++ {
		clk.SetTime(start)
		tr.UpsertPod(running(pods[i], start))
		clk.SetTime(end)
		tr.DeletePod(finished(pods[i], start, end))
	}
	want := func(at time.Time) burn.Amount {
		return recount([]run{{gpus: live, start: t0}, {gpus: deleted, start: start, end: end}}, t0, at)
	}
	checkpointsStayAtRecount(t, tr, clk, api, b, end.Add(time.Minute), 4, want, gpuMinutes(live+deleted), nil)
	if len(tr.tombstones) != 0 {
		t.Errorf("%d tombstones still held after the checkpoints folded them", len(tr.tombstones))
	}
}
