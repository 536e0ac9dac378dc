package admitqueue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/gang"
)

// TestTwoGangsRaceForRoomForOne: two gangs of 4 pods of 1 GiB race, on two
// replicas at once, for a namespace with room for 6 such pods: exactly one
// gang is admitted whole, the other is denied at every pod, the first
// denial naming the gang that holds the room; the namespace never holds
// more than its limit. Without the hold, each replica admits pods of its
// gang (partial gangs); without the first pod's check of the whole gang,
// the second gang's first pod takes the 2 pods' room left and holds 3 more.
func TestTwoGangsRaceForRoomForOne(t *testing.T) {
	for _, kind := range []string{"podgroup", "annotation"} {
		t.Run(kind, func(t *testing.T) {
			const limit, need = 6144, 1024
			groups := newGroups(gang.Group{Name: "a", UID: "pg-a", MinCount: 4}, gang.Group{Name: "b", UID: "pg-b", MinCount: 4})
			c := fakeClient(t)
			sa, la, _, _, _ := newGangStore(t, c, "a", groups, gangOpts())
			sb, lb, _, _, _ := newGangStore(t, c, "b", groups, gangOpts())
			pod := func(g string, i int) *corev1.Pod {
				name := fmt.Sprintf("%s-%d", g, i)
				if kind == "podgroup" {
					return member(name, g)
				}
				return annotated(name, g, "4")
			}
			var mu sync.Mutex
			admitted := map[string]int{}
			var denials []string
			var wg sync.WaitGroup
			for _, g := range []string{"a", "b"} {
				s, l := sa, la
				if g == "b" {
					s, l = sb, lb
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range 4 {
						p := pod(g, i)
						res, err := admitMember(t.Context(), s, l, p, limit, need)
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						if res.Allowed {
							admitted[g]++
						} else {
							denials = append(denials, strings.Join(res.Denials, "; "))
						}
						mu.Unlock()
						if got := heldMiB(t, c, l, ""); got > limit {
							t.Errorf("after %s: the namespace holds %d MiB, over its %d MiB", p.Name, got, limit)
						}
					}
				}()
			}
			wg.Wait()
			if whole := admitted["a"] == 4 && admitted["b"] == 0 || admitted["a"] == 0 && admitted["b"] == 4; !whole {
				t.Fatalf("admitted %v: want one gang whole and the other not at all", admitted)
			}
			winner := "a"
			if admitted["b"] == 4 {
				winner = "b"
			}
			want := fmt.Sprintf("room held by gang ns/%s", winner)
			if len(denials) != 4 || !strings.Contains(denials[0], "needs 4 x") || strings.Contains(denials[0], "room held by") && !strings.Contains(denials[0], want) {
				t.Errorf("denials %q: want 4, the first naming the gang (and, while it holds room, %q)", denials, want)
			}
			if h, ok := holdOf(t, c, winner); !ok || h.Slots != 0 || h.Ended != "Consumed" || len(h.Pods) != 4 {
				t.Errorf("winner's hold %+v: want every slot consumed", h)
			}
		})
	}
}

// TestGangLaterPodsConsumeTheHold: a gang of 4 x 1 GiB in a namespace of
// 4.5 GiB. The first pod holds 3 slots; an ordinary pod of 1 GiB is denied
// (the room is held); a later pod consumes one slot (the hold shrinks in
// the same write); the API server's retry of the same review consumes no
// second slot; a later pod larger than a slot must fit its excess (2 GiB:
// denied; 1.5 GiB: admitted); the last slot ends the hold, and a pod of
// the gang beyond it is an ordinary pod that starts no new hold.
func TestGangLaterPodsConsumeTheHold(t *testing.T) {
	const limit = 4608
	c := fakeClient(t)
	s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	step := func(pod *corev1.Pod, need int64, allowed bool, slots int32) {
		t.Helper()
		res, err := admitMember(t.Context(), s, l, pod, limit, need)
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed != allowed {
			t.Fatalf("%s (%d MiB): allowed %v, want %v (%q)", pod.Name, need, res.Allowed, allowed, res.Denials)
		}
		if h, _ := holdOf(t, c, "g"); h.Slots != slots {
			t.Fatalf("after %s: hold %+v, want %d slots", pod.Name, h, slots)
		}
		if got := heldMiB(t, c, l, ""); got > limit {
			t.Fatalf("after %s: %d MiB held, over %d", pod.Name, got, limit)
		}
	}
	step(annotated("g-0", "g", "4"), 1024, true, 3)
	step(member("loner", ""), 1024, false, 3) // 1 GiB + 3 GiB held + 1 GiB > 4.5 GiB
	step(annotated("g-1", "g", "4"), 1024, true, 2)
	step(annotated("g-1", "g", "4"), 1024, true, 2) // the API server's retry
	step(annotated("g-2", "g", "4"), 2048, false, 2)
	step(annotated("g-2", "g", "4"), 1536, true, 1)
	step(annotated("g-3", "g", "4"), 1024, true, 0)
	if h, _ := holdOf(t, c, "g"); h.Ended != "Consumed" || len(h.Pods) != 4 {
		t.Fatalf("hold %+v: want ended Consumed with 4 pods", h)
	}
	step(annotated("g-4", "g", "4"), 512, false, 0) // beyond the gang: ordinary, and 4.5 GiB are taken
	if n := len(reservationSet(t, c, "ns").Status.Gangs); n != 1 {
		t.Fatalf("%d holds, want the ended one alone (no new hold for a pod beyond the gang)", n)
	}
}

// TestHostileGangInput: what a tenant writes on its pods or PodGroups
// that gpuadmit cannot read as a gang is a clear denial that names it, and
// nothing is reserved or held; a Basic PodGroup, or a gang of one, is an
// ordinary pod.
func TestHostileGangInput(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		groups  *fakeGroups
		allowed bool
		want    string
	}{
		{name: "not a number", pod: annotated("p", "g", "four"), want: `gpuadmit.io/gang-min-count="four" is not a whole number`},
		{name: "padded", pod: annotated("p", "g", " 4"), want: "is not a whole number"},
		{name: "zero", pod: annotated("p", "g", "0"), want: "at least 1 pod"},
		{name: "negative", pod: annotated("p", "g", "-3"), want: "at least 1 pod"},
		{name: "huge", pod: annotated("p", "g", "10001"), want: "more than 10000 pods"},
		{name: "overflow", pod: annotated("p", "g", "99999999999"), want: "is not a whole number"},
		{name: "bad name", pod: annotated("p", "Bad_Name", "4"), want: "is not a valid gang name"},
		{name: "name alone", pod: member("p", "", gang.NameAnnotation, "g"), want: "needs both"},
		{name: "count alone", pod: member("p", "", gang.MinCountAnnotation, "4"), want: "needs both"},
		{name: "both kinds", pod: member("p", "pg", gang.NameAnnotation, "g", gang.MinCountAnnotation, "4"),
			groups: newGroups(gang.Group{Name: "pg", UID: "u", MinCount: 4}), want: "belongs to one gang"},
		{name: "missing PodGroup", pod: member("p", "pg"), groups: newGroups(), want: "which does not exist (yet)"},
		{name: "PodGroup API not served", pod: member("p", "pg"), want: "does not read PodGroups"},
		{name: "huge PodGroup", pod: member("p", "pg"), groups: newGroups(gang.Group{Name: "pg", UID: "u", MinCount: 1 << 30}), want: "more than 10000 pods"},
		{name: "Basic PodGroup", pod: member("p", "pg"), groups: newGroups(gang.Group{Name: "pg", UID: "u"}), allowed: true},
		{name: "gang of one", pod: annotated("p", "g", "1"), allowed: true},
		{name: "gang beyond the limit", pod: annotated("p", "g", "5"), want: "gang ns/g needs 5 x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(t)
			s, l, _, _, _ := newGangStore(t, c, "a", tt.groups, gangOpts())
			res, err := admitMember(t.Context(), s, l, tt.pod, 4096, 1024)
			if err != nil {
				t.Fatal(err)
			}
			msg := strings.Join(res.Denials, "; ")
			if res.Allowed != tt.allowed || !strings.Contains(msg, tt.want) {
				t.Fatalf("allowed %v %q; want allowed %v with %q", res.Allowed, msg, tt.allowed, tt.want)
			}
			u := &gpuadmitv1.GPUReservationSet{}
			_ = c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: gpuadmitv1.ObjectName}, u)
			if n := len(u.Status.Gangs); n != 0 || (!tt.allowed && len(u.Status.Reservations) != 0) {
				t.Fatalf("%+v: want no hold, and nothing reserved for a denied pod", u.Status)
			}
		})
	}
}

// TestGangDenialNamesTheHolder: a gang denied at its first pod because
// another gang holds the room is told which, and how many of its pods are
// still to come.
func TestGangDenialNamesTheHolder(t *testing.T) {
	c := fakeClient(t)
	s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	if res, err := admitMember(t.Context(), s, l, annotated("a-0", "a", "4"), 6144, 1024); err != nil || !res.Allowed {
		t.Fatalf("a-0: %q %v", res.Denials, err)
	}
	res, err := admitMember(t.Context(), s, l, annotated("b-0", "b", "4"), 6144, 1024)
	want := "gang ns/b needs 4 x"
	if err != nil || res.Allowed || !strings.HasPrefix(res.Denials[0], want) || !strings.Contains(res.Denials[0], "room held by gang ns/a (3 pods still to come)") {
		t.Fatalf("b-0: allowed %v %q %v; want denied naming gang ns/b and the room gang ns/a holds", res.Allowed, res.Denials, err)
	}
}

// TestGangDryRunHoldsNothing: a dry run of a gang's first pod answers what
// the create would get (denied when the whole gang does not fit; allowed
// when it does) but writes no reservation and no hold, and takes no slot of
// a gang that holds room.
func TestGangDryRunHoldsNothing(t *testing.T) {
	c := fakeClient(t)
	s, l, _, _, _ := newGangStore(t, c, "a", nil, gangOpts())
	dry := func(pod *corev1.Pod) decision.Result {
		t.Helper()
		f := limitDecider(l, 4096, 1024)
		res, err := s.Admit(context.WithValue(t.Context(), decideKey{}, f), pod.UID, decision.Request{Pod: pod, Namespace: "ns", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := dry(annotated("big-0", "big", "5")); res.Allowed || !strings.Contains(res.Denials[0], "gang ns/big needs 5 x") {
		t.Fatalf("dry run of a gang of 5 into room for 4: %v %q, want denied naming the gang", res.Allowed, res.Denials)
	}
	if res := dry(annotated("g-0", "g", "4")); !res.Allowed {
		t.Fatalf("dry run of a gang of 4 into room for 4: denied %q", res.Denials)
	}
	if res, err := admitMember(t.Context(), s, l, annotated("h-0", "h", "2"), 4096, 1024); err != nil || !res.Allowed {
		t.Fatalf("h-0: %q %v", res.Denials, err)
	}
	if res := dry(annotated("h-1", "h", "2")); !res.Allowed {
		t.Fatalf("dry run of h's second pod: denied %q", res.Denials)
	}
	st := reservationSet(t, c, "ns").Status
	if len(st.Reservations) != 1 || len(st.Gangs) != 1 || st.Gangs[0].Slots != 1 {
		t.Fatalf("%+v: want h-0's reservation and hold alone, its slot not taken by a dry run", st)
	}
}
