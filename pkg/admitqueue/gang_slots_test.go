package admitqueue

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// A later pod of a gang admitted (its slot consumed) and then found absent
// (its create failed) gives its slot back when its reservation was at
// least one slot's demand: an ordinary pod cannot take the room, and the
// pod's re-create completes the gang. A smaller absent pod's slot is not
// given back (that would count more than was decided): the counted total
// never exceeds the limit.
func TestGangAbsentLaterPodGivesSlotBack(t *testing.T) {
	const quota = 4096
	for _, tc := range []struct {
		name     string
		bNeed    int64 // what the absent later pod b reserved (a slot: 1024)
		slots    int32 // the hold's slots once b is found absent
		xAllowed bool  // an ordinary 2048 MiB pod after b's absence
	}{
		{name: "a slot's demand: given back", bNeed: 1024, slots: 1, xAllowed: false},
		{name: "larger than a slot: given back", bNeed: 2048, slots: 1, xAllowed: false},
		{name: "smaller than a slot: not given back", bNeed: 512, slots: 0, xAllowed: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClient(t)
			opts := gangOpts()
			opts.ConfirmAfter, opts.RecheckMax = time.Second, 2*time.Second
			s, l, _, clk, _ := newGangStore(t, c, "a", nil, opts)
			a := annotated("a", "g", "2") // exists: never absent
			if err := c.Create(t.Context(), a.DeepCopy()); err != nil {
				t.Fatal(err)
			}
			if res, err := admitMember(t.Context(), s, l, a, quota, 1024); err != nil || !res.Allowed {
				t.Fatalf("a: %q %v", res.Denials, err)
			}
			b := annotated("b", "g", "2") // admitted (the last slot: Consumed), never created
			if res, err := admitMember(t.Context(), s, l, b, quota, tc.bNeed); err != nil || !res.Allowed {
				t.Fatalf("b: %q %v", res.Denials, err)
			}
			if h, _ := holdOf(t, c, "g"); h.Slots != 0 || h.Ended != gpuadmitv1.GangConsumed {
				t.Fatalf("after b: hold %+v, want Consumed", h)
			}
			for range 4 {
				s.Clean(t.Context())
				clk.Step(time.Second)
			}
			h, _ := holdOf(t, c, "g")
			if h.Slots != tc.slots || len(h.Pods) != 1 {
				t.Fatalf("after b found absent: hold %+v, want %d slots and a alone", h, tc.slots)
			}
			if got := heldMiB(t, c, l, ""); got > quota {
				t.Fatalf("counted %d MiB > quota %d", got, quota)
			}
			x := testpod.New("x").NS("ns").UID("uid-x").App("c", testpod.GPU(1), testpod.Mem(3072)).Build()
			res, err := admitMember(t.Context(), s, l, x, quota, 3072)
			if err != nil || res.Allowed != tc.xAllowed {
				t.Fatalf("ordinary x (3 GiB): allowed=%v %v, want %v", res.Allowed, err, tc.xAllowed)
			}
			if got := heldMiB(t, c, l, ""); got > quota {
				t.Fatalf("counted %d MiB > quota %d after x", got, quota)
			}
			if tc.xAllowed {
				return
			}
			if res, err := admitMember(t.Context(), s, l, annotated("b2", "g", "2"), quota, 1024); err != nil || !res.Allowed {
				t.Fatalf("b2, b's re-create: %q %v; the gang is never whole", res.Denials, err)
			}
			if got := heldMiB(t, c, l, ""); got > quota {
				t.Fatalf("counted %d MiB > quota %d after b2", got, quota)
			}
		})
	}
}

// The RT2-1 reproduction: gang g of 3; b (a later pod) admitted and never
// created; an ordinary pod, b's re-create and c: the gang is whole.
func TestGangAbsentLaterPodGangCompletes(t *testing.T) {
	c := fakeClient(t)
	opts := gangOpts()
	opts.ConfirmAfter, opts.RecheckMax = time.Second, 2*time.Second
	s, l, _, clk, _ := newGangStore(t, c, "a", nil, opts)
	const quota, mib = 4096, 1024
	a := annotated("a", "g", "3")
	if err := c.Create(t.Context(), a.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if res, err := admitMember(t.Context(), s, l, a, quota, mib); err != nil || !res.Allowed {
		t.Fatalf("a: %q %v", res.Denials, err)
	}
	if res, err := admitMember(t.Context(), s, l, annotated("b", "g", "3"), quota, mib); err != nil || !res.Allowed {
		t.Fatalf("b: %q %v", res.Denials, err)
	}
	for range 4 {
		s.Clean(t.Context())
		clk.Step(time.Second)
	}
	x := testpod.New("x").NS("ns").UID("uid-x").App("c", testpod.GPU(1), testpod.Mem(2048)).Build()
	if err := c.Create(t.Context(), x.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	res, _ := admitMember(t.Context(), s, l, x, quota, 2048)
	r2, _ := admitMember(t.Context(), s, l, annotated("b2", "g", "3"), quota, mib)
	r3, _ := admitMember(t.Context(), s, l, annotated("c", "g", "3"), quota, mib)
	if res.Allowed || !r2.Allowed || !r3.Allowed {
		t.Errorf("x (ordinary) allowed=%v, b2 allowed=%v, c allowed=%v %q: want the gang whole, x denied", res.Allowed, r2.Allowed, r3.Allowed, r3.Denials)
	}
	if got := heldMiB(t, c, l, ""); got > quota {
		t.Errorf("counted %d MiB > quota %d", got, quota)
	}
}

// A review whose key is a gang's hold key (a forged UID, gang/KIND/NAME)
// is refused: it never leaves the hold out of its own count.
func TestGangReviewKeyIsHoldKeyRefused(t *testing.T) {
	c := fakeClient(t)
	s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	const quota, mib = 4096, 1024
	if res, err := admitMember(t.Context(), s, l, annotated("a", "g", "4"), quota, mib); err != nil || !res.Allowed {
		t.Fatalf("a: %q %v", res.Denials, err)
	}
	for _, uid := range []string{"gang/Annotation/g", "gang/PodGroup/g", "gang/Annotation/other"} {
		f := testpod.New("f").NS("ns").UID(uid).App("c", testpod.GPU(1), testpod.Mem(mib)).Build()
		res, err := admitMember(t.Context(), s, l, f, quota, mib)
		if err == nil || res.Allowed {
			t.Errorf("review key %s: allowed=%v err=%v, want refused", uid, res.Allowed, err)
		}
		if got := heldMiB(t, c, l, ""); got > quota {
			t.Errorf("review key %s: counted %d MiB > quota %d", uid, got, quota)
		}
	}
}

// A review changes the holds only in the write that reserves it: a dry
// run, or a first pod denied, of a gang beyond MaxGangs drops no ended
// hold (which would ride on another review's write); a first pod that
// reserves drops the oldest.
func TestGangHoldsChangeOnlyWhenReserving(t *testing.T) {
	c := fakeClient(t)
	s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	st := &gpuadmitv1.GPUReservationSetStatus{}
	for i := range MaxGangs {
		st.Gangs = append(st.Gangs, gpuadmitv1.GangHold{Kind: gpuadmitv1.GangOptIn, Name: fmt.Sprintf("old-%d", i), MinCount: 2,
			Ended: gpuadmitv1.GangConsumed, HeldSince: metav1.NewTime(time.Unix(int64(2000-i), 0))})
	}
	oldest := st.Gangs[MaxGangs-1].Name
	decideOn := func(name string, dryRun bool, limit int64) outcome {
		t.Helper()
		pod := annotated(name, "new", "2")
		r := &review{ctx: context.WithValue(t.Context(), decideKey{}, limitDecider(l, limit, 1024)), uid: pod.UID,
			req: decision.Request{Pod: pod, Namespace: "ns", DryRun: dryRun}}
		o, err := s.decideOne("ns", r, st, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return o
	}
	for _, tc := range []struct {
		name   string
		dryRun bool
		limit  int64
	}{{"dry", true, 4096}, {"denied", false, 1024}} {
		if o := decideOn(tc.name, tc.dryRun, tc.limit); o == reserving {
			t.Fatalf("%s reserved", tc.name)
		}
		if len(st.Gangs) != MaxGangs || !slices.ContainsFunc(st.Gangs, func(h gpuadmitv1.GangHold) bool { return h.Name == oldest }) {
			t.Fatalf("%s (not reserving) changed the holds: %d holds, the oldest ended one kept: %v", tc.name, len(st.Gangs),
				slices.ContainsFunc(st.Gangs, func(h gpuadmitv1.GangHold) bool { return h.Name == oldest }))
		}
	}
	if o := decideOn("real", false, 4096); o != reserving {
		t.Fatalf("real: outcome %v, want reserving", o)
	}
	if len(st.Gangs) != MaxGangs || slices.ContainsFunc(st.Gangs, func(h gpuadmitv1.GangHold) bool { return h.Name == oldest }) ||
		st.Gangs[len(st.Gangs)-1].Name != "new" {
		t.Fatalf("the reserving first pod: %d holds, want the oldest ended one replaced by gang new", len(st.Gangs))
	}
}

// A hold is told apart from a review's own reservation by its flag, not
// its key: the review's own entry left out never takes the hold with it.
func TestCountableKeepsHoldWhateverTheKey(t *testing.T) {
	c := fakeClient(t)
	s, _, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	h := gpuadmitv1.GangHold{Kind: gpuadmitv1.GangOptIn, Name: "g", MinCount: 3, Slots: 2, Demand: gpuadmitv1.Demand{GPU: 1, GPUMem: 1024}}
	st := gpuadmitv1.GPUReservationSetStatus{Gangs: []gpuadmitv1.GangHold{h}}
	rs := s.countable(st, reservation.HoldUID(h.Kind, h.Name))
	if len(rs) != 1 || !rs[0].Hold {
		t.Fatalf("countable left out the hold for a review keyed as it: %+v", rs)
	}
}
