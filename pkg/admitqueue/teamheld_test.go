package admitqueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// perUserDecider admits a review of need devices while its user's team
// reservations (confirmed or not) leave room under perUser; a denied one
// that fits without the unconfirmed ones may wait.
func perUserDecider(perUser, need int64) decideFn {
	return func(req decision.Request) (verdict, error) {
		for _, tm := range req.Teams {
			var all, confirmed int64
			for _, r := range tm.Reservations {
				if r.User != req.ChargedUser {
					continue
				}
				all += r.Demand.Of("nvidia").GPU
				if !r.Unconfirmed {
					confirmed += r.Demand.Of("nvidia").GPU
				}
			}
			if all+need > perUser {
				return verdict{Demand: vec(need, need*1024), Wait: confirmed+need <= perUser,
					Denial: fmt.Sprintf("user %q in GPUClusterQuota %q: %d reserved, %d asked, limit %d", req.ChargedUser, tm.Quota.Name, all, need, perUser)}, nil
			}
		}
		return verdict{Reserve: true, Demand: vec(need, need*1024)}, nil
	}
}

// TestTeamHeldRoomCountsForItsUser attacks the room held for a review
// that waits: it is its user's (per-user limits), so a later review of the
// same user cannot take it. Alice's ghost (1 device, unconfirmed) makes
// her review of 2 wait under her per-user limit of 2; her next review of 1
// must not be admitted past it (it waits, or is denied), while bob's is.
func TestTeamHeldRoomCountsForItsUser(t *testing.T) {
	a := newTeamReplica(t, fakeClient(t), "a", 10, inTeam("ns-a"))
	q, _ := a.l.ClusterQuota(teamName)
	ghost := gpuadmitv1.Reservation{PodUID: "ghost", PodName: "ghost", Namespace: "ns-a", User: "alice", Demand: gpuadmitv1.Demand{GPU: 1}}
	tm := &team{quota: q, status: gpuadmitv1.GPUReservationSetStatus{Members: []string{"ns-a"}, Reservations: []gpuadmitv1.Reservation{ghost}}}
	rev := func(name, user string, need int64) *review {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: name, UID: types.UID(name)}}
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), decideKey{}, perUserDecider(2, need)), time.Minute)
		t.Cleanup(cancel)
		return &review{ctx: ctx, uid: pod.UID, deadline: a.clock.Now().Add(10 * time.Second),
			req: decision.Request{Pod: pod, Namespace: "ns-a", ChargedUser: user}}
	}
	first, second, other := rev("alice-2", "alice", 2), rev("alice-1", "alice", 1), rev("bob-1", "bob", 1)
	st := &gpuadmitv1.GPUReservationSetStatus{}
	a.s.decideInOrder("ns-a", []*review{first, second, other}, st, []*team{tm}, 0)
	if first.outcome != waiting {
		t.Fatalf("alice's review of 2: %v (%v), want waiting for her ghost", first.outcome, first.err)
	}
	if second.outcome == reserving {
		t.Errorf("alice's review of 1 was admitted into the room held for her waiting review of 2 (per-user limit 2, ghost 1): the held room carried no user")
	}
	if other.outcome != reserving {
		t.Errorf("bob's review: %v (%v), want admitted (alice's held room is not his)", other.outcome, other.err)
	}
}
