package admitqueue

import (
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/gang"
)

// TestForgedGangHoldEnds: a forged review (or a create that failed after
// admission) makes a gang's first pod's reservation and a hold of 3 slots,
// and no pod ever appears. The hold never ends on a timer shorter than the
// bound, nor on the writer's timestamp; it ends when the bound passes on
// the tidying replica's own clock (a Warning Event on the first pod says
// 3 of 4 pods never came, and the room is free again), or sooner, when a
// read confirms the gang's every admitted pod absent. A pod of the gang
// after the release is an ordinary pod.
func TestForgedGangHoldEnds(t *testing.T) {
	t.Run("the bound", func(t *testing.T) {
		c := fakeClient(t)
		s, l, _, clk, ev := newGangStore(t, c, "a", nil, gangOpts()) // confirmAfter 1h: absence does not end it first
		if res, err := admitMember(t.Context(), s, l, annotated("ghost", "g", "4"), 4096, 1024); err != nil || !res.Allowed {
			t.Fatalf("forged first pod: %v %v", res, err)
		}
		s.Clean(t.Context()) // first seen now
		clk.Step(5*time.Minute - time.Second)
		s.Clean(t.Context())
		if h, _ := holdOf(t, c, "g"); h.Slots != 3 || len(ev.list()) != 0 {
			t.Fatalf("before the bound: hold %+v, events %q; want 3 slots held, none", h, ev.list())
		}
		if res, _ := admitMember(t.Context(), s, l, member("other", ""), 4096, 1024); res.Allowed {
			t.Fatalf("an ordinary pod took room the hold holds")
		}
		clk.Step(time.Second)
		s.Clean(t.Context())
		h, _ := holdOf(t, c, "g")
		if h.Slots != 0 || h.Ended != "Released" {
			t.Fatalf("after the bound: hold %+v, want released", h)
		}
		if e := ev.list(); len(e) != 1 || !strings.HasPrefix(e[0], "Pod/ghost GangHoldReleased") || !strings.Contains(e[0], "3 of its 4 pods never came") {
			t.Fatalf("events %q: want one on the first pod saying 3 of 4 pods never came", e)
		}
		if res, _ := admitMember(t.Context(), s, l, annotated("late", "g", "4"), 4096, 3072); !res.Allowed {
			t.Fatalf("a pod of the released gang, 3 GiB beside the ghost's 1 GiB: denied %q, want admitted as an ordinary pod", res.Denials)
		}
		if h, _ := holdOf(t, c, "g"); h.Slots != 0 {
			t.Fatalf("a pod after the release started a hold again: %+v", h)
		}
		clk.Step(5 * time.Minute)
		s.Clean(t.Context())
		if _, ok := holdOf(t, c, "g"); ok {
			t.Fatalf("an annotation gang's ended hold is kept past the bound")
		}
	})
	t.Run("absence", func(t *testing.T) {
		c := fakeClient(t)
		opts := gangOpts()
		opts.ConfirmAfter, opts.RecheckMax = time.Second, 2*time.Second
		s, l, _, clk, _ := newGangStore(t, c, "a", nil, opts)
		if res, err := admitMember(t.Context(), s, l, annotated("ghost", "g", "4"), 4096, 1024); err != nil || !res.Allowed {
			t.Fatalf("forged first pod: %v %v", res, err)
		}
		for range 3 {
			s.Clean(t.Context())
			clk.Step(time.Second)
		}
		st := reservationSet(t, c, "ns").Status
		if len(st.Reservations) != 0 || len(st.Gangs) != 1 || st.Gangs[0].Slots != 0 || st.Gangs[0].Ended != "Absent" {
			t.Fatalf("%+v: want the ghost's reservation removed and its hold ended (Absent)", st)
		}
	})
}

// TestPodGroupChangesMidGang: what a PodGroup's owner does to it while its
// gang is admitted: deleting it (or its deletion beginning: a PodGroup waits for its pods behind a finalizer) ends the hold at once (its room is free)
// and its later pods are denied (no PodGroup); lowering minCount shrinks
// the hold to what is still missing (never below the admitted pods);
// raising it holds no more (the hold's size was decided with the first
// pod: the pods beyond it are ordinary); re-creating it under the same
// name starts another gang.
func TestPodGroupChangesMidGang(t *testing.T) {
	tests := []struct {
		name   string
		change func(g *fakeGroups)
		slots  int32 // after the change and a tidy; -1: no hold left
		next   bool  // the gang's third pod is admitted
	}{
		{name: "deleted", change: func(g *fakeGroups) { g.remove("pg") }, slots: -1},
		{name: "being deleted", change: func(g *fakeGroups) { g.put(gang.Group{Name: "pg", UID: "u1", MinCount: 4, Deleting: true}) }, slots: -1},
		{name: "lowered to 3", change: func(g *fakeGroups) { g.put(gang.Group{Name: "pg", UID: "u1", MinCount: 3}) }, slots: 1, next: true},
		{name: "lowered to 1", change: func(g *fakeGroups) { g.put(gang.Group{Name: "pg", UID: "u1", MinCount: 1}) }, slots: 0, next: true},
		{name: "raised to 8", change: func(g *fakeGroups) { g.put(gang.Group{Name: "pg", UID: "u1", MinCount: 8}) }, slots: 2, next: true},
		{name: "re-created", change: func(g *fakeGroups) { g.remove("pg"); g.put(gang.Group{Name: "pg", UID: "u2", MinCount: 4}) }, slots: -1, next: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const limit = 8192
			groups := newGroups(gang.Group{Name: "pg", UID: "u1", MinCount: 4})
			c := fakeClient(t)
			s, l, _, _, _ := newGangStore(t, c, "a", groups, gangOpts())
			for _, name := range []string{"p0", "p1"} {
				if res, err := admitMember(t.Context(), s, l, member(name, "pg"), limit, 1024); err != nil || !res.Allowed {
					t.Fatalf("%s: %v %v", name, res.Denials, err)
				}
			}
			tt.change(groups)
			s.Clean(t.Context())
			h, ok := holdOf(t, c, "pg")
			if tt.slots < 0 && ok || tt.slots >= 0 && (!ok || h.Slots != tt.slots) {
				t.Fatalf("hold %+v (present %v), want %d slots", h, ok, tt.slots)
			}
			res, err := admitMember(t.Context(), s, l, member("p2", "pg"), limit, 1024)
			if err != nil || res.Allowed != tt.next {
				t.Fatalf("p2: allowed %v %q %v, want allowed %v", res.Allowed, res.Denials, err, tt.next)
			}
			if got := heldMiB(t, c, l, ""); got > limit {
				t.Fatalf("%d MiB held, over %d", got, limit)
			}
		})
	}
}
