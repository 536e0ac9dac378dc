package admitqueue

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
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

// staleNamespace is a replica's informer-backed client whose cache has not
// received another replica's write of namespace ns's own object yet (while
// stale is set): it reads as absent.
type staleNamespace struct {
	client.Client
	ns    string
	stale atomic.Bool
}

func (c *staleNamespace) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if c.stale.Load() && key.Namespace == c.ns && key.Name == gpuadmitv1.ObjectName {
		return apierrors.NewNotFound(schema.GroupResource{Group: gpuadmitv1.Group, Resource: gpuadmitv1.ReservationSetResource}, key.Name)
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// TestTeamJoinReadsTheNamespaceLive: replica b admitted 4 devices in ns-b
// (outside the team) and wrote ns-b's object; replica a's informer has not
// delivered that write when a makes the joining round. Copying from the
// informer copied nothing, wrote ns-b as a member, and never adopted again
// (ns-b was then in the members): ns-a filled the team's limit a second
// time until the pod watch recorded ns-b's pods. The joining namespace's
// object is read from the API server.
func TestTeamJoinReadsTheNamespaceLive(t *testing.T) {
	c := fakeClient(t)
	stale := &staleNamespace{Client: c, ns: "ns-b"}
	b := newTeamReplica(t, c, "b", 4, inTeam("ns-a"), outOfTeam("ns-b"))
	a := newTeamReplica(t, c, "a", 4, inTeam("ns-a"), outOfTeam("ns-b"))
	a.s.client = stale // a's informer copy
	stale.stale.Store(true)
	if got := burst(t, b, "ns-b", 4, 4, 1); got != 4 {
		t.Fatalf("b admitted %d in ns-b before it joined, want 4", got)
	}
	a.l.UpsertNamespace(inTeam("ns-b"))
	b.l.UpsertNamespace(inTeam("ns-b"))
	got := burst(t, a, "ns-a", 4, 4, 1)
	stale.stale.Store(false) // a's informer catches up
	got += burst(t, a, "ns-a", 4, 4, 1)
	got += burst(t, b, "ns-a", 4, 4, 1)
	if got != 0 {
		t.Errorf("admitted %d more in ns-a after ns-b joined with 4 devices in flight (team limit 4)", got)
	}
}

// TestTeamObjectBounded: reviews spread over many namespaces of one team
// (each namespace's own object within admission.reservations.maxPerNamespace)
// cannot grow the team's object past teamCapFactor times that bound: the
// review that would add one more is refused naming the team's object, and
// the object keeps its bound.
func TestTeamObjectBounded(t *testing.T) {
	c := fakeClient(t)
	var nss []*corev1.Namespace
	for i := range 5 {
		nss = append(nss, inTeam(fmt.Sprintf("ns-%d", i)))
	}
	r := newTeamReplica(t, c, "a", 100, nss...)
	r.s.opts.MaxReservations = 1 // the team's object: at most 4
	admitted := 0
	var refused []error
	for _, ns := range nss {
		n, errs := burstErr(r, ns.Name, 1, 100, 1)
		admitted += n
		refused = append(refused, errs...)
	}
	if admitted != teamCapFactor || len(refused) != 1 || !strings.Contains(refused[0].Error(), "GPUReservationSet "+ownNS+"/gcq.") {
		t.Errorf("admitted %d (want %d), refused %v (want one naming the team's object)", admitted, teamCapFactor, refused)
	}
	if u := teamObject(t, c); u == nil || len(u.Status.Reservations) != teamCapFactor {
		t.Errorf("the team's object holds %v, want %d entries", u, teamCapFactor)
	}
}
