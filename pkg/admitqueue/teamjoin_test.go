package admitqueue

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// TestTeamJoinCountsInFlightReservations attacks the join of a namespace
// to a team while pods it admitted are still in flight (reserved in its
// own object only, not recorded by any watch): the team's other
// namespaces, or the joining one, must not fill the team's limit again.
// Invariant: what the team holds (its members' recorded pods and its
// object's countable entries) never passes the limit, and nothing more is
// admitted once the in-flight pods fill it.
func TestTeamJoinCountsInFlightReservations(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(a *replica) // before: ns-b outside any team
		join  func(a *replica) // ns-b joins
		next  string           // the namespace of the reviews after the join
		clean bool             // the cleaner writes the members before any review
	}{
		{name: "relabelled in, reviews in the other member", setup: func(*replica) {},
			join: func(a *replica) { a.l.UpsertNamespace(inTeam("ns-b")) }, next: "ns-a"},
		{name: "relabelled in, reviews in the joining namespace", setup: func(*replica) {},
			join: func(a *replica) { a.l.UpsertNamespace(inTeam("ns-b")) }, next: "ns-b"},
		{name: "relabelled in, the cleaner writes the members first", setup: func(*replica) {},
			join: func(a *replica) { a.l.UpsertNamespace(inTeam("ns-b")) }, next: "ns-a", clean: true},
		{name: "the team quota created", setup: func(a *replica) {
			a.l.DeleteClusterQuota(teamName)
			a.l.UpsertNamespace(inTeam("ns-b"))
		}, join: func(a *replica) { a.l.UpsertClusterQuota(teamQuota(4)) }, next: "ns-a"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(t)
			a := newTeamReplica(t, c, "a", 4, inTeam("ns-a"), outOfTeam("ns-b"))
			tt.setup(a)
			if got := burst(t, a, "ns-b", 4, 4, 1); got != 4 {
				t.Fatalf("admitted %d in ns-b before it joined, want 4", got)
			}
			tt.join(a)
			if tt.clean {
				a.s.Clean(context.Background())
			}
			if got := burst(t, a, tt.next, 4, 4, 1); got != 0 {
				t.Errorf("admitted %d in %s after ns-b joined with 4 devices in flight (limit 4): the joining namespace's reservations were not counted", got, tt.next)
			}
			if held := teamHeld(t, c, a); held != 4 {
				t.Errorf("the team holds %d devices as written, want the 4 in flight", held)
			}
			u := teamObject(t, c)
			if u == nil || !slicesEqual(u.Status.Members, []string{"ns-a", "ns-b"}) {
				t.Fatalf("the team object's members: %+v", u)
			}
			for _, r := range u.Status.Reservations {
				if r.Namespace != "ns-b" {
					t.Errorf("team entry %s names namespace %q, want ns-b", r.PodUID, r.Namespace)
				}
			}
		})
	}
}

// TestTeamObjectDeletedKeepsMembers attacks the deletion of a team's
// object that holds members only (no reservation, no departure): a member
// relabelled out before the object is written again must still depart
// (its running pods counted for the grace), not be forgotten with the
// object.
func TestTeamObjectDeletedKeepsMembers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		delete bool
	}{
		{name: "object deleted", delete: true},
		{name: "object kept"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := fakeClient(t)
			a := newTeamReplica(t, c, "a", 4, inTeam("ns-a"), inTeam("ns-b"))
			recordPods(a, "ns-b", 3)
			a.s.Clean(context.Background()) // writes the members
			u := teamObject(t, c)
			if u == nil || !slicesEqual(u.Status.Members, []string{"ns-a", "ns-b"}) || len(u.Status.Reservations) != 0 {
				t.Fatalf("the team object before: %+v", u)
			}
			if tt.delete {
				if err := c.Delete(context.Background(), u); err != nil {
					t.Fatal(err)
				}
				a.s.Deleted(u) // the informer's delete event
			}
			a.l.UpsertNamespace(outOfTeam("ns-b"))
			if got := burst(t, a, "ns-a", 4, 4, 1); got != 1 {
				t.Errorf("admitted %d in ns-a with ns-b's 3 devices still running, want 1 (limit 4)", got)
			}
			if u := teamObject(t, c); u == nil || len(u.Status.Departures) != 1 || u.Status.Departures[0].Namespace != "ns-b" {
				t.Errorf("the departure of ns-b was not written: %+v", u)
			}
		})
	}
}

// TestTeamJoinKeepsTheUser attacks the per-user limit across a join: the
// entries copied from the joining namespace's object keep the user they
// were charged to, so alice, with 2 devices in flight in ns-b, gets
// nothing more in ns-a under a per-user limit of 2, while bob does.
func TestTeamJoinKeepsTheUser(t *testing.T) {
	c := fakeClient(t)
	a := newTeamReplica(t, c, "a", 10, inTeam("ns-a"), outOfTeam("ns-b"))
	admit := func(ns, name, user string) bool {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name)}}
		ctx := context.WithValue(context.Background(), decideKey{}, perUserDecider(2, 1)) // no deadline: decided, never waits
		res, err := a.s.Admit(ctx, pod.UID, decision.Request{Pod: pod, Namespace: ns, ChargedUser: user})
		if err != nil {
			t.Fatalf("%s/%s: %v", ns, name, err)
		}
		return res.Allowed
	}
	for _, name := range []string{"b1", "b2"} {
		if !admit("ns-b", name, "alice") {
			t.Fatalf("alice's %s was denied in ns-b outside the team", name)
		}
	}
	a.l.UpsertNamespace(inTeam("ns-b"))
	if admit("ns-a", "a1", "alice") {
		t.Error("alice admitted a third device in ns-a (per-user limit 2) with 2 in flight in ns-b, which joined the team: the copied entries lost her name")
	}
	if !admit("ns-a", "a2", "bob") {
		t.Error("bob was denied: alice's entries were counted as his")
	}
	u := teamObject(t, c)
	for _, r := range u.Status.Reservations {
		if r.Namespace == "ns-b" && r.User != "alice" {
			t.Errorf("copied entry %s names user %q, want alice", r.PodUID, r.User)
		}
	}
}
