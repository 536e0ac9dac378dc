package admitqueue

import (
	"strings"
	"testing"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
)

// A GPUReservationSet deleted while it holds a gang's hold keeps the
// hold (repair.go): the room held for the gang's pods still to come is not
// given to an ordinary pod, and the gang's later pods still take their
// slots. Attacks: the object deleted with the first pod's reservation and
// the hold, and deleted with the hold only (the first pod's reservation
// already ended: its pod in the ledger, not counted here).
func TestDeletedObjectKeepsGangHold(t *testing.T) {
	const quota, mib = 4096, 1024
	for _, tc := range []struct {
		name     string
		holdOnly bool  // the delete event carries the hold only
		ordinary int64 // MiB of the ordinary pod that must not fit
	}{
		{name: "reservation and hold", ordinary: 2048},      // 1024 + 2 x 1024 held + 2048 > 4096
		{name: "hold only", holdOnly: true, ordinary: 3072}, // 2 x 1024 held + 3072 > 4096
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClient(t)
			s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
			if res, err := admitMember(t.Context(), s, l, annotated("a", "g", "3"), quota, mib); err != nil || !res.Allowed {
				t.Fatalf("a: %q %v", res.Denials, err)
			}
			u := reservationSet(t, c, "ns")
			if err := c.Delete(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			seen := u.DeepCopy()
			if tc.holdOnly {
				seen.Status.Reservations, seen.Status.ReservationCount = nil, 0
			}
			s.Deleted(toolscache.DeletedFinalStateUnknown{Key: "ns/" + gpuadmitv1.ObjectName, Obj: seen})
			x := testpod.New("x").NS("ns").UID("uid-x").App("c", testpod.GPU(1), testpod.Mem(tc.ordinary)).Build()
			if res, err := admitMember(t.Context(), s, l, x, quota, tc.ordinary); err != nil || res.Allowed {
				t.Fatalf("ordinary x of %d MiB allowed into the room gang g's hold held (err %v)", tc.ordinary, err)
			}
			if h, ok := holdOf(t, c, "g"); !ok || h.Slots != 2 {
				t.Fatalf("the recreated object's hold of g: %v %+v, want 2 slots", ok, h)
			}
			for _, name := range []string{"b", "c"} {
				if res, err := admitMember(t.Context(), s, l, annotated(name, "g", "3"), quota, mib); err != nil || !res.Allowed {
					t.Fatalf("later pod %s of g: %q %v", name, res.Denials, err)
				}
			}
			if h, _ := holdOf(t, c, "g"); h.Slots != 0 || h.Ended != gpuadmitv1.GangConsumed {
				t.Errorf("g's hold after its later pods: %+v, want consumed", h)
			}
			if got := heldMiB(t, c, l, ""); got > quota {
				t.Errorf("counted %d MiB > quota %d", got, quota)
			}
		})
	}
}

// A replica whose PodGroup informer lags (it still holds the deleted
// PodGroup g of UID old) meets the hold another replica wrote for the
// re-created g (UID new): its round keeps the hold, and it denies a pod of
// g (try again) rather than replacing the hold. Once it saw old deleted, or
// has seen the two differ for HoldTimeout, the hold is the deleted g's.
func TestLaggingPodGroupInformerKeepsHold(t *testing.T) {
	c := fakeClient(t)
	fresh := newGroups(gang.Group{Name: "g", UID: "new", MinCount: 3})
	stale := newGroups(gang.Group{Name: "g", UID: "old", MinCount: 3})
	a, la, _, _, _ := newGangStore(t, c, "a", fresh, gangOpts())
	b, lb, _, clk, _ := newGangStore(t, c, "b", stale, gangOpts())
	const quota, mib = 4096, 1024
	if res, err := admitMember(t.Context(), a, la, member("p1", "g"), quota, mib); err != nil || !res.Allowed {
		t.Fatalf("p1: %q %v", res.Denials, err)
	}
	b.Clean(t.Context())
	if h, ok := holdOf(t, c, "g"); !ok || h.Slots != 2 || h.PodGroupUID != "new" {
		t.Fatalf("after the lagging replica's round: hold %v %+v, want g (new) with 2 slots", ok, h)
	}
	res, err := admitMember(t.Context(), b, lb, member("p2", "g"), quota, mib)
	if err != nil || res.Allowed || !strings.Contains(strings.Join(res.Denials, ";"), "again shortly") {
		t.Fatalf("p2 on the lagging replica: allowed=%v %q %v, want a try-again denial", res.Allowed, res.Denials, err)
	}
	if h, ok := holdOf(t, c, "g"); !ok || h.Slots != 2 || h.PodGroupUID != "new" {
		t.Fatalf("after p2's review on the lagging replica: hold %v %+v, want g (new) with 2 slots", ok, h)
	}
	if res, err := admitMember(t.Context(), a, la, member("p2", "g"), quota, mib); err != nil || !res.Allowed {
		t.Fatalf("p2 on the up-to-date replica: %q %v", res.Denials, err)
	}
	if h, _ := holdOf(t, c, "g"); h.Slots != 1 {
		t.Fatalf("g's hold after p2: %+v, want 1 slot", h)
	}
	clk.Step(gangOpts().HoldTimeout)
	b.Clean(t.Context())
	if _, ok := holdOf(t, c, "g"); ok {
		t.Errorf("a hold whose PodGroup this replica has seen differ for HoldTimeout was kept")
	}
}
