package admitqueue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// TestTeamTwoReplicasNeverPassLimit: two replicas admit at once in two
// namespaces of one team, each namespace without a limit of its own: the
// pods admitted together never pass the team's limit, and the team
// object holds exactly the admitted pods' reservations.
func TestTeamTwoReplicasNeverPassLimit(t *testing.T) {
	for _, tt := range []struct {
		name        string
		limit, need int64
		each        int
	}{
		{name: "1 device each, limit 4", limit: 4, need: 1, each: 8},
		{name: "2 devices each, limit 5", limit: 5, need: 2, each: 6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(t)
			a := newTeamReplica(t, c, "a", tt.limit, inTeam("ns-a"), inTeam("ns-b"))
			b := newTeamReplica(t, c, "b", tt.limit, inTeam("ns-a"), inTeam("ns-b"))
			var wg sync.WaitGroup
			var allowed atomic.Int64
			wg.Go(func() { allowed.Add(int64(burst(t, a, "ns-a", tt.each, tt.limit, tt.need))) })
			wg.Go(func() { allowed.Add(int64(burst(t, b, "ns-b", tt.each, tt.limit, tt.need))) })
			wg.Wait()
			if got, want := allowed.Load(), tt.limit/tt.need; got != want {
				t.Errorf("%d pods admitted over the team, want %d (limit %d, %d each)", got, want, tt.limit, tt.need)
			}
			for _, r := range []*replica{a, b} {
				if held := teamHeld(t, c, r); held > tt.limit {
					t.Errorf("replica %s counts %d devices held by the team, over its limit %d", r.s.opts.Replica, held, tt.limit)
				}
			}
			u := teamObject(t, c)
			if u == nil || int64(len(u.Status.Reservations)) != allowed.Load() {
				t.Fatalf("the team object holds %v, want the %d admitted pods' reservations", u, allowed.Load())
			}
			for _, r := range u.Status.Reservations {
				if r.Namespace != "ns-a" && r.Namespace != "ns-b" {
					t.Errorf("team entry %s names namespace %q", r.PodUID, r.Namespace)
				}
			}
		})
	}
}

// failNamespaceWrite fails, the first times times, the status write of
// namespace ns's own object with err (after letting it reach nothing).
func failNamespaceWrite(base client.WithWatch, ns string, times int, err error) client.Client {
	var n atomic.Int64
	return interceptor.NewClient(base, interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, cl client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		if obj.GetNamespace() == ns && obj.GetName() == gpuadmitv1.ObjectName && n.Add(1) <= int64(times) {
			return err
		}
		return cl.SubResource(sub).Update(ctx, obj, opts...)
	}})
}

// TestTeamNamespaceWriteConflicts: the team's write succeeds, the
// namespace's conflicts: the round starts again, finds the review's own
// team entry and neither counts it against the review nor adds it twice;
// the review is admitted at a limit of exactly its demand, and the team is
// full for the other replica.
func TestTeamNamespaceWriteConflicts(t *testing.T) {
	base := fakeClient(t)
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "gpuadmit.io", Resource: "gpureservationsets"}, gpuadmitv1.ObjectName, errors.New("changed"))
	a := newTeamReplica(t, failNamespaceWrite(base, "ns-a", 1, conflict), "a", 1, inTeam("ns-a"), inTeam("ns-b"))
	b := newTeamReplica(t, base, "b", 1, inTeam("ns-a"), inTeam("ns-b"))
	if got := burst(t, a, "ns-a", 1, 1, 1); got != 1 {
		t.Fatalf("the review was not admitted after the namespace's write conflicted (its own team entry counted against it?)")
	}
	if u := teamObject(t, base); u == nil || len(u.Status.Reservations) != 1 || u.Status.Reservations[0].Namespace != "ns-a" {
		t.Fatalf("the team object holds %+v, want the one reservation of ns-a", u)
	}
	if !hasReservation(reservationSet(t, base, "ns-a"), "a-ns-a-1") {
		t.Error("the namespace's object lacks the admitted pod's reservation")
	}
	if got := burst(t, b, "ns-b", 2, 1, 1); got != 0 {
		t.Errorf("replica b admitted %d pods into a full team", got)
	}
}

// TestTeamReplicaDiesBetweenWrites: the team's write succeeds and the
// namespace's fails (the replica died between them): the review is not
// admitted, and its team entry is an unconfirmed reservation, counted by
// every replica (never under-counting) until a read in the entry's own
// namespace finds no pod; a pod that does exist there keeps it.
func TestTeamReplicaDiesBetweenWrites(t *testing.T) {
	for _, tt := range []struct {
		name      string
		podExists bool // the admitted pod was stored after all
	}{
		{name: "pod never created: the entry ends", podExists: false},
		{name: "pod exists in its namespace: the entry stays", podExists: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := fakeClient(t)
			down := apierrors.NewServiceUnavailable("replica gone")
			a := newTeamReplica(t, failNamespaceWrite(base, "ns-a", 1, down), "a", 1, inTeam("ns-a"), inTeam("ns-b"))
			b := newTeamReplica(t, base, "b", 1, inTeam("ns-a"), inTeam("ns-b"))
			if got, errs := burstErr(a, "ns-a", 1, 1, 1); got != 0 || len(errs) != 1 {
				t.Fatalf("admitted %d (errors %v) although the namespace's write failed", got, errs)
			}
			if u := teamObject(t, base); u == nil || len(u.Status.Reservations) != 1 {
				t.Fatalf("the team object holds %+v, want the failed round's entry", u)
			}
			if tt.podExists {
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "a-ns-a-1", UID: "a-ns-a-1"}}
				if err := base.Create(context.Background(), pod); err != nil {
					t.Fatal(err)
				}
			}
			if got := burst(t, b, "ns-b", 1, 1, 1); got != 0 {
				t.Fatal("replica b admitted while the team's unconfirmed entry holds the limit")
			}
			b.s.Clean(context.Background()) // schedules the entry's check
			b.clock.Step(2 * time.Second)
			b.s.Clean(context.Background()) // reads the pod in ns-a
			entries := 0
			if u := teamObject(t, base); u != nil {
				entries = len(u.Status.Reservations)
			}
			want, admits := 0, 1
			if tt.podExists {
				want, admits = 1, 0
			}
			if entries != want {
				t.Fatalf("the team object holds %d entries after the absence check, want %d", entries, want)
			}
			if got := burst(t, b, "ns-b", 1, 1, 1); got != admits {
				t.Errorf("replica b admitted %d after the check, want %d", got, admits)
			}
		})
	}
}

// TestTeamObjectDeleted: the team's object deleted by hand while it holds
// reservations: every replica keeps counting them, and the next write
// brings them back.
func TestTeamObjectDeleted(t *testing.T) {
	c := fakeClient(t)
	a := newTeamReplica(t, c, "a", 2, inTeam("ns-a"), inTeam("ns-b"))
	b := newTeamReplica(t, c, "b", 2, inTeam("ns-a"), inTeam("ns-b"))
	if got := burst(t, a, "ns-a", 2, 2, 1); got != 2 {
		t.Fatalf("admitted %d, want 2", got)
	}
	u := teamObject(t, c)
	if err := c.Delete(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	a.s.Deleted(u) // the informers' delete events
	b.s.Deleted(u)
	if got := burst(t, b, "ns-b", 2, 2, 1); got != 0 {
		t.Fatalf("replica b admitted %d after the team object was deleted: its reservations were forgotten", got)
	}
	b.s.Clean(context.Background())
	if back := teamObject(t, c); back == nil || len(back.Status.Reservations) != 2 || !slicesEqual(back.Status.Members, []string{"ns-a", "ns-b"}) {
		t.Fatalf("the team object was not written back with its reservations and members: %+v", back)
	}
}

func slicesEqual(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

// recordPods has r's ledger record n running pods of one device in ns.
func recordPods(r *replica, ns string, n int) {
	for i := range n {
		name := fmt.Sprintf("run-%s-%d", ns, i)
		r.l.UpsertPod(testpod.New(name).NS(ns).UID(name).RV(fmt.Sprint(10+i)).Node("n1").App("c", testpod.GPU(1)).Phase(corev1.PodRunning).Build())
	}
}

// TestTeamNamespaceRelabelledOut: a namespace whose running pods are
// charged to the team leaves the selection (its labels changed): its pods
// stay counted for the team, and its new pods are decided against the
// team, until the grace passes on the replica's clock, or its pods end.
func TestTeamNamespaceRelabelledOut(t *testing.T) {
	for _, tt := range []struct {
		name string
		end  func(r *replica) // ends the departure
	}{
		{name: "the grace passes", end: func(r *replica) { r.clock.Step(10*time.Minute + time.Second) }},
		{name: "its pods end", end: func(r *replica) {
			for i := range 3 {
				r.l.DeletePodByName("ns-b", fmt.Sprintf("run-ns-b-%d", i))
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(t)
			a := newTeamReplica(t, c, "a", 4, inTeam("ns-a"), inTeam("ns-b"))
			recordPods(a, "ns-b", 3)
			a.s.Clean(context.Background()) // writes the team's members
			if u := teamObject(t, c); u == nil || !slicesEqual(u.Status.Members, []string{"ns-a", "ns-b"}) {
				t.Fatalf("the team object's members: %+v", u)
			}
			a.l.UpsertNamespace(outOfTeam("ns-b"))
			if got := burst(t, a, "ns-a", 3, 4, 1); got != 1 {
				t.Fatalf("admitted %d in ns-a after ns-b left with 3 devices running, want 1 (limit 4)", got)
			}
			u := teamObject(t, c)
			if len(u.Status.Departures) != 1 || u.Status.Departures[0].Namespace != "ns-b" || u.Status.Departures[0].NoticedBy != "a" {
				t.Fatalf("the departure of ns-b was not written: %+v", u.Status)
			}
			if got := burst(t, a, "ns-b", 1, 4, 1); got != 0 {
				t.Fatal("a new pod of the departing namespace was not decided against the full team")
			}
			a.clock.Step(9 * time.Minute)
			if got := burst(t, a, "ns-a", 1, 4, 1); got != 0 {
				t.Fatal("the departure ended before the grace")
			}
			tt.end(a)
			if got := burst(t, a, "ns-a", 4, 4, 1); got != 3 {
				t.Errorf("admitted %d in ns-a after the departure ended, want 3", got)
			}
			if u := teamObject(t, c); len(u.Status.Departures) != 0 || !slicesEqual(u.Status.Members, []string{"ns-a"}) {
				t.Errorf("the ended departure is still written: %+v", u.Status)
			}
		})
	}
}

// TestTeamGhostIsABlocker: a review that fits without the unconfirmed
// reservations, where the only one is a team entry of another namespace,
// waits for it (rather than being denied at once), with the entry, which
// names its own namespace, as its blocker, once.
func TestTeamGhostIsABlocker(t *testing.T) {
	a := newTeamReplica(t, fakeClient(t), "a", 1, inTeam("ns-a"), inTeam("ns-b"))
	ghost := gpuadmitv1.Reservation{PodUID: "ghost", PodName: "ghost", Namespace: "ns-a", Demand: gpuadmitv1.Demand{GPU: 1}}
	tm := &team{status: gpuadmitv1.GPUReservationSetStatus{Reservations: []gpuadmitv1.Reservation{ghost}}}
	st := &gpuadmitv1.GPUReservationSetStatus{}
	r := &review{uid: "new", deadline: a.clock.Now().Add(10 * time.Second)}
	if o, err := a.s.waitOrDecide(r, st, nil); o != decided || err != nil {
		t.Fatalf("without the team: %v, %v; want decided", o, err)
	}
	o, err := a.s.waitOrDecide(r, st, []*team{tm, tm})
	if o != waiting || err != nil || len(r.blockers) != 1 || r.blockers[0].Namespace != "ns-a" {
		t.Fatalf("with the team's ghost: %v, %v, blockers %+v; want waiting for the ghost of ns-a", o, err, r.blockers)
	}
}

// TestTeamQuotaRecreatedCountsItsEntries: the team quota deleted and
// created again keeps its object: the entries of the pods admitted before
// count against the new quota at once (nothing starts from zero).
func TestTeamQuotaRecreatedCountsItsEntries(t *testing.T) {
	c := fakeClient(t)
	a := newTeamReplica(t, c, "a", 2, inTeam("ns-a"), inTeam("ns-b"))
	if got := burst(t, a, "ns-a", 2, 2, 1); got != 2 {
		t.Fatalf("admitted %d, want 2", got)
	}
	a.l.DeleteClusterQuota(teamName)
	a.l.UpsertClusterQuota(teamQuota(2))
	if got := burst(t, a, "ns-b", 1, 2, 1); got != 0 {
		t.Fatal("the re-created team quota did not count the entries of the pods admitted before")
	}
	if u := teamObject(t, c); u == nil || len(u.Status.Reservations) != 2 {
		t.Fatalf("the team object lost its entries: %+v", u)
	}
}

// TestTeamsChangedDecidesAgain: the decider refuses a review that does not
// count a team quota selecting its namespace (a label or a quota changed
// after the round listed the teams): the round writes nothing, lists the
// teams again and decides again; the review is answered by that decision,
// never with the refusal, never without the team.
func TestTeamsChangedDecidesAgain(t *testing.T) {
	c := fakeClient(t)
	a := newTeamReplica(t, c, "a", 1, inTeam("ns-a"))
	var calls atomic.Int64
	decide := func(req decision.Request) (verdict, error) {
		if calls.Add(1) == 1 {
			return verdict{}, fmt.Errorf("namespace %q: GPUClusterQuota %q: %w", "ns-a", teamName, decision.ErrTeamsChanged)
		}
		if len(req.Teams) != 1 {
			return verdict{}, fmt.Errorf("decided with %d teams, want 1", len(req.Teams))
		}
		return teamDecider(a.l, 1, 1)(req)
	}
	if err := admitPod(context.Background(), a.s, "ns-a", "p1", "p1", decide); err != nil {
		t.Fatalf("the review was answered with the refusal: %v", err)
	}
	if calls.Load() != 2 {
		t.Errorf("decided %d times, want 2", calls.Load())
	}
	if u := teamObject(t, c); u == nil || len(u.Status.Reservations) != 1 {
		t.Fatalf("the team object holds %+v, want the one reservation", u)
	}
}
