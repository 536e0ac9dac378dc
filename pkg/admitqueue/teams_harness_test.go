package admitqueue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The team tests run replicas (stores, each with its own ledger) on one
// fake API server: a team quota "ml" selects the namespaces labelled
// team=ml; a test's decider denies a review once the team's devices, as
// the replica's ledger counts them over the members with the reservations
// handed in (ledger.Team), would pass the limit.

const (
	ownNS    = "gpuadmit-system"
	teamName = "ml"
)

// teamQuota is the GPUClusterQuota "ml" (team=ml), limit gpus devices.
func teamQuota(gpus int64) *gpuadmitv1.GPUClusterQuota {
	return &gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: teamName, UID: "gcq-ml"},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "ml"}},
			Hard: corev1.ResourceList{"limits.nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}
}

// inTeam and outOfTeam are namespace ns with and without the team's label.
func inTeam(ns string) *corev1.Namespace { return testns.New(ns, map[string]string{"team": "ml"}) }
func outOfTeam(ns string) *corev1.Namespace {
	return testns.New(ns, map[string]string{"team": "other"})
}

// replica is one store of a team test, with its ledger and clock.
type replica struct {
	s     *Store
	l     *ledger.Ledger
	w     *fakeWatch
	clock *clocktesting.FakeClock
	seq   atomic.Int64 // names the pods of its bursts
}

// newTeamReplica returns replica name on c, whose ledger knows the team
// quota (limit gpus) and the namespaces given.
func newTeamReplica(t *testing.T, c client.Client, name string, gpus int64, nss ...*corev1.Namespace) *replica {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	l := ledger.New(ledger.Options{Families: []effective.Family{effective.Nvidia()}})
	for _, ns := range nss {
		l.UpsertNamespace(ns)
	}
	l.UpsertClusterQuota(teamQuota(gpus))
	w := &fakeWatch{}
	w.rv.Store(1)
	s := NewStore(Parts{Client: c, API: c, Ledger: l, Watch: w, Members: &fakeMembers{watch: w, others: map[string]string{}},
		Decider: testDecider{}, Metrics: &counted{}, Teams: l},
		Options{Replica: name, ConfirmAfter: time.Second, RecheckMax: 4 * time.Second, ReadsPerSecond: 10, Clock: clk,
			Namespace: ownNS, LeaveGrace: 10 * time.Minute})
	return &replica{s: s, l: l, w: w, clock: clk}
}

// teamDecider admits a pod of need devices while every team handed in has
// room for it (limit devices), as replica l counts the team.
func teamDecider(l *ledger.Ledger, limit, need int64) decideFn {
	return func(req decision.Request) (verdict, error) {
		for _, tm := range req.Teams {
			snap := l.Team(tm.Quota, tm.Members, tm.Reservations, "")
			used, reserved := snap.Used.Of("nvidia").GPU, snap.Reserved.Of("nvidia").GPU
			if used+reserved+need > limit {
				return verdict{Demand: vec(need, need*1024), Denial: fmt.Sprintf("GPUClusterQuota %q: %d used, %d reserved, %d asked, limit %d",
					tm.Quota.Name, used, reserved, need, limit)}, nil
			}
		}
		return verdict{Reserve: true, Demand: vec(need, need*1024)}, nil
	}
}

// teamObject reads the team's GPUReservationSet (nil: none).
func teamObject(t *testing.T, c client.Client) *gpuadmitv1.GPUReservationSet {
	t.Helper()
	u := &gpuadmitv1.GPUReservationSet{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: ownNS, Name: gpuadmitv1.TeamObjectName(teamName)}, u)
	if err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatal(err)
	}
	return u
}

// teamHeld is what the team holds as replica r counts it: its ledger's
// pods in the members and the team object's countable reservations.
func teamHeld(t *testing.T, c client.Client, r *replica) int64 {
	t.Helper()
	q, ok := r.l.ClusterQuota(teamName)
	if !ok {
		t.Fatal("the ledger has no team quota")
	}
	var st gpuadmitv1.GPUReservationSetStatus
	if u := teamObject(t, c); u != nil {
		st = u.Status
	}
	snap := r.l.Team(q, st.Members, reservation.Countable(st, r.w.PodsResourceVersion()), "")
	return snap.Used.Of("nvidia").GPU + snap.Reserved.Of("nvidia").GPU
}

// burst admits n pods in ns through r, concurrently, each of need devices
// under limit, and returns how many were allowed (an error fails the test).
func burst(t *testing.T, r *replica, ns string, n int, limit, need int64) int {
	t.Helper()
	allowed, errs := burstErr(r, ns, n, limit, need)
	for _, err := range errs {
		t.Error(err)
	}
	return allowed
}

// burstErr is burst returning the reviews' errors.
func burstErr(r *replica, ns string, n int, limit, need int64) (int, []error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	allowed := 0
	for range n {
		wg.Go(func() {
			name := fmt.Sprintf("%s-%s-%d", r.s.opts.Replica, ns, r.seq.Add(1))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name)}}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := r.s.Admit(context.WithValue(ctx, decideKey{}, teamDecider(r.l, limit, need)), pod.UID, decision.Request{Pod: pod, Namespace: ns})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				mu.Unlock()
				return
			}
			if res.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return allowed, errs
}
