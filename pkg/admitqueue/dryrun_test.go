package admitqueue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// dryRun admits pod ns/name (UID uid) as a dry run (kubectl create
// --dry-run=server, a tenant's gpuadmit eval), decided by f.
func dryRun(ctx context.Context, s *Store, uid types.UID, name string, f decideFn) (decision.Result, error) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}}
	return s.Admit(context.WithValue(ctx, decideKey{}, f), uid, decision.Request{Pod: pod, Namespace: "ns", DryRun: true})
}

// TestDryRunNeverReservesNorHoldsRoom attacks what a tenant's dry runs
// could take from the namespace's quota (limit 10240 MiB): an allowed dry
// run of the whole quota reserves nothing, so a real create of the whole
// quota after it is admitted; and a dry run that waits for an unconfirmed
// reservation (as a create would, to answer what a create would get)
// holds no room for itself, so a genuine create that fits beside the
// unconfirmed reservation is admitted at once rather than denied.
func TestDryRunNeverReservesNorHoldsRoom(t *testing.T) {
	const limit = 10240
	t.Run("an allowed dry run reserves nothing", func(t *testing.T) {
		ctx := t.Context()
		c := fakeClient(t)
		s, l, _, _ := newStore(t, c, "a")
		var ok bool
		for i := range 3 { // three dry runs of the whole quota, one after the other
			res, err := dryRun(ctx, s, types.UID("dry-"+string(rune('0'+i))), "dry", fitsDecider(l, limit, limit, &ok))
			if err != nil || !res.Allowed {
				t.Fatalf("dry run %d: allowed %v, error %v; want allowed", i, res.Allowed, err)
			}
		}
		if err := admitPod(ctx, s, "ns", "real", "real", fitsDecider(l, limit, limit, &ok)); err != nil || !ok {
			t.Fatalf("the real create of the whole quota after the dry runs: allowed %v, error %v", ok, err)
		}
		if rs := usage(t, c, "ns").Status.Reservations; len(rs) != 1 || rs[0].PodUID != "real" || rs[0].Demand.GPUMem != limit {
			t.Fatalf("reservations %+v, want the real create's %d MiB alone", rs, limit)
		}
	})
	t.Run("a waiting dry run holds no room", func(t *testing.T) {
		c := fakeClient(t)
		s, l, _, _ := newStoreWith(t, c, "a", Options{ConfirmAfter: 2 * time.Second, RecheckMax: 10 * time.Second, ReadsPerSecond: 10})
		if err := reserve(t.Context(), s, "ghost", "ghost", vec(1, 4096)); err != nil { // due in 2 s
			t.Fatal(err)
		}
		// The dry run of 8192 MiB fits only once the ghost ends: it waits.
		var calls atomic.Int32
		var dryOK bool
		decideDry := fitsDecider(l, limit, 8192, &dryOK)
		rechecked := make(chan struct{})
		dryDone := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := dryRun(ctx, s, "dry", "dry", func(req decision.Request) (verdict, error) {
				if calls.Add(1) == 2 { // decided again while it waits
					close(rechecked)
				}
				return decideDry(req)
			})
			dryDone <- err
		}()
		select {
		case <-rechecked:
		case <-time.After(5 * time.Second):
			t.Fatal("the dry run did not wait")
		}
		// A genuine create of 2048 MiB fits beside the ghost (4096 + 2048);
		// its deadline comes before the ghost is due, so it cannot wait.
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var ok bool
		if err := admitPod(ctx, s, "ns", "real", "real", fitsDecider(l, limit, 2048, &ok)); err != nil || !ok {
			t.Fatalf("the genuine create beside a waiting dry run: allowed %v, error %v; want allowed (the dry run holds nothing)", ok, err)
		}
		if err := <-dryDone; err != nil {
			t.Fatalf("the dry run: %v", err)
		}
		for _, r := range usage(t, c, "ns").Status.Reservations {
			if r.PodUID == "dry" {
				t.Fatalf("the dry run is reserved: %+v", r)
			}
		}
	})
}
