package admitqueue

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
)

// TestForgedGangHoldDeniesNoGenuineCreate: a client that reached the
// webhook port forges the review of a gang's "first pod" (1 GiB, a gang of
// 8, of a PodGroup or of the annotations) that never becomes a pod, in a
// namespace of 16 GiB: its reservation and its gang's hold (7 x 1 GiB)
// are admitted. A genuine create of 12 GiB, which fits once the ghost is
// gone, arrives next: it waits for the ghost's absence (the hold is as
// unconfirmed as the ghost's own reservation) and is admitted once a read
// confirms the ghost absent, which ends the hold (Absent) in the same
// write; the namespace never holds more than its quota. Without the hold
// counted as unconfirmed, the genuine create is denied outright, for the
// hold timeout (5 minutes), repeatable with a new gang name. The same
// holds for a genuine pod of the gang whose first pod was forged (it
// counts the hold with one slot fewer, the slot it would take: as
// unconfirmed as the hold); once the hold ended it is an ordinary pod.
func TestForgedGangHoldDeniesNoGenuineCreate(t *testing.T) {
	const quota, ghostMiB, genuineMiB = 16384, 1024, 12288
	for _, kind := range []string{"podgroup", "annotation", "the gang's own later pod"} {
		t.Run(kind, func(t *testing.T) {
			ghost := annotated("ghost", "g", "8")
			groups := newGroups(gang.Group{Name: "g", UID: "pg-g", MinCount: 8})
			if kind == "podgroup" {
				ghost = member("ghost", "g")
			}
			c := fakeClient(t)
			opts := gangOpts()
			opts.ConfirmAfter, opts.RecheckMax = time.Second, 2*time.Second
			clk := opts.Clock.(*clocktesting.FakeClock)
			s, l, _, _, _ := newGangStore(t, c, "a", groups, opts)
			if res, err := admitMember(t.Context(), s, l, ghost, quota, ghostMiB); err != nil || !res.Allowed {
				t.Fatalf("forged first pod: %q %v", res.Denials, err)
			}
			if h, ok := holdOf(t, c, "g"); !ok || h.Slots != 7 {
				t.Fatalf("hold %+v: want 7 slots held for the forged gang", h)
			}
			b := testpod.New("real").NS("ns").UID("uid-real").App("c", testpod.GPU(1), testpod.Mem(genuineMiB))
			if kind == "the gang's own later pod" { // counts the hold with one slot fewer, as unconfirmed
				b = b.Annotate(gang.NameAnnotation, "g").Annotate(gang.MinCountAnnotation, "8")
			}
			genuine := b.Build()
			var outstanding atomic.Int64
			outstanding.Add(1)
			var res decision.Result
			var err error
			go func() {
				defer outstanding.Add(-1)
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				res, err = s.Admit(context.WithValue(ctx, decideKey{}, quotaDecider(l, quota, genuineMiB)), genuine.UID, decision.Request{Pod: genuine, Namespace: "ns"})
			}()
			var maxHeld int64
			for i := 0; outstanding.Load() > 0 && i < 200; i++ {
				idle(clk, &outstanding)
				maxHeld = max(maxHeld, heldMiB(t, c, l, ""))
				clk.Step(100 * time.Millisecond)
			}
			idle(clk, &outstanding)
			if err != nil || !res.Allowed {
				t.Fatalf("genuine 12 GiB create: allowed %v %q %v; want it to wait for the forged first pod's absence, then admitted", res.Allowed, res.Denials, err)
			}
			if h, ok := holdOf(t, c, "g"); ok && (h.Slots != 0 || h.Ended != gpuadmitv1.GangAbsent) {
				t.Errorf("forged gang's hold %+v: want ended (Absent) with its ghost", h)
			}
			if maxHeld = max(maxHeld, heldMiB(t, c, l, "")); maxHeld > quota {
				t.Errorf("the namespace held %d MiB, over its quota of %d MiB", maxHeld, quota)
			}
		})
	}
}

// TestConfirmedGangHoldIsNotWaitedFor: once a pod of the gang is recorded
// (by this replica's ledger, or marked in the object by another replica's),
// its hold is an ordinary one: a create that needs the hold's room is
// denied at once, without waiting for an unrelated unconfirmed reservation
// (whose absence would not make room: the hold is no ghost's), and the
// namespace holds no more than its quota.
func TestConfirmedGangHoldIsNotWaitedFor(t *testing.T) {
	const quota, podMiB, genuineMiB = 16384, 1024, 12288
	for _, how := range []string{"recorded by this replica", "marked by another"} {
		t.Run(how, func(t *testing.T) {
			c := fakeClient(t)
			opts := gangOpts()
			opts.ConfirmAfter, opts.RecheckMax = time.Second, 2*time.Second
			s, l, w, _, _ := newGangStore(t, c, "a", nil, opts)
			first := annotated("first", "g", "8")
			if res, err := admitMember(t.Context(), s, l, first, quota, podMiB); err != nil || !res.Allowed {
				t.Fatalf("first pod: %q %v", res.Denials, err)
			}
			// a plain forged review's reservation, unconfirmed, that a
			// review counting the hold as unconfirmed would wait for
			plain := testpod.New("plain").NS("ns").UID("uid-plain").App("c", testpod.GPU(1), testpod.Mem(512)).Build()
			if res, err := admitMember(t.Context(), s, l, plain, quota, 512); err != nil || !res.Allowed {
				t.Fatalf("plain forged pod: %q %v", res.Denials, err)
			}
			if how == "recorded by this replica" {
				l.UpsertPod(first)
			} else {
				markRecorded(t, c, first)
				w.rv.Store(0) // this replica's watch is behind the mark: it counts the reservation
			}
			genuine := testpod.New("real").NS("ns").UID("uid-real").App("c", testpod.GPU(1), testpod.Mem(genuineMiB)).Build()
			// No clock step: a review that waited would hang until this
			// context's end (an error), instead of being denied at once.
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
			defer cancel()
			res, err := s.Admit(context.WithValue(ctx, decideKey{}, quotaDecider(l, quota, genuineMiB)), genuine.UID, decision.Request{Pod: genuine, Namespace: "ns"})
			if err != nil || res.Allowed {
				t.Fatalf("genuine 12 GiB create: allowed %v %q %v; want denied at once by the confirmed hold", res.Allowed, res.Denials, err)
			}
			if got := heldMiB(t, c, l, ""); got > quota {
				t.Errorf("the namespace holds %d MiB, over its quota of %d MiB", got, quota)
			}
		})
	}
}

// TestGangFirstPodKeepsItsOwnDenial: a gang's first pod denied on its own
// (it alone does not fit) is told why in the decision's own words; only a
// first pod that fits on its own but not with its whole gang is told that
// the gang does not fit.
func TestGangFirstPodKeepsItsOwnDenial(t *testing.T) {
	c := fakeClient(t)
	s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	res, err := admitMember(t.Context(), s, l, annotated("big-0", "big", "2"), 4096, 8192)
	if err != nil || res.Allowed || len(res.Denials) != 1 || !strings.HasPrefix(res.Denials[0], "limits.nvidia.com/gpumem: 0 MiB used") || strings.Contains(res.Denials[0], "gang") {
		t.Fatalf("big-0 alone over the quota: allowed %v %q %v; want its own denial, not the gang's", res.Allowed, res.Denials, err)
	}
	res, err = admitMember(t.Context(), s, l, annotated("two-0", "two", "2"), 4096, 3072)
	if err != nil || res.Allowed || len(res.Denials) != 1 || !strings.HasPrefix(res.Denials[0], "gang ns/two needs 2 x") {
		t.Fatalf("two-0 fits alone, not with its gang: allowed %v %q %v; want the gang's denial", res.Allowed, res.Denials, err)
	}
}

// markRecorded marks pod's reservation recorded (at resourceVersion 50),
// as another replica's round would.
func markRecorded(t *testing.T, c client.Client, pod *corev1.Pod) {
	t.Helper()
	u := reservationSet(t, c, "ns")
	for i := range u.Status.Reservations {
		if u.Status.Reservations[i].PodUID == pod.UID {
			u.Status.Reservations[i].RecordedResourceVersion = "50"
		}
	}
	if err := c.Status().Update(t.Context(), u); err != nil {
		t.Fatal(err)
	}
}
