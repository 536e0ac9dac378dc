package admitqueue

import (
	"context"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Start runs the cleaner until ctx ends (a controller-runtime Runnable):
// every second it refreshes the confirm window (pkg/absence) and does one
// round (Clean).
func (s *Store) Start(ctx context.Context) error {
	t := s.opts.Clock.NewTicker(time.Second)
	defer t.Stop()
	s.refreshWindow(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			s.refreshWindow(ctx)
			s.Clean(ctx)
		}
	}
}

// Clean does one round over every GPUReservationSet with reservations that
// this replica owns (Membership.Owner: all of them when replicas do not
// forward), and every deleted one whose reservations this replica keeps:
// it confirms, by reading the pod, the absence of reservations nobody
// recorded that are due, then has the namespace's worker tidy the object
// in the same order as the admissions. It returns how many reservations it
// removed.
func (s *Store) Clean(ctx context.Context) int {
	var list gpuadmitv1.GPUReservationSetList
	if err := s.client.List(ctx, &list); err != nil {
		s.opts.Log.Error(err, "listing GPUReservationSets")
		return 0
	}
	budget := s.opts.ReadsPerSecond
	present := map[types.UID]bool{}
	nss := s.lost.namespaces()
	for i := range list.Items {
		u := s.copies.Newest(&list.Items[i])
		if u.Name != gpuadmitv1.ObjectName || len(u.Status.Reservations) == 0 && len(u.Status.Gangs) == 0 {
			continue // a team's is cleaned by cleanTeams
		}
		if err := reservation.Validate(u); err != nil {
			s.opts.Log.Error(err, "not cleaning a malformed GPUReservationSet")
			continue
		}
		for _, r := range u.Status.Reservations {
			present[r.PodUID] = true // its schedule is kept (a review here may wait for it)
		}
		if _, self := s.members.Owner(u.Namespace); !self {
			continue // its owner tidies it, without conflicting with its own admissions
		}
		nss = append(nss, u.Namespace)
		budget -= s.confirmer.ConfirmDue(ctx, u, budget)
	}
	removed := s.cleanTeams(ctx, list.Items, present, &budget)
	for _, ns := range slices.Compact(slices.Sorted(slices.Values(nss))) {
		jctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := s.tidyNamespace(jctx, ns)
		cancel()
		if err != nil {
			if !apierrors.IsConflict(err) {
				s.opts.Log.Error(err, "cleaning GPUReservationSet", "namespace", ns)
			}
			continue // again next round
		}
		removed += n
	}
	s.confirmer.Forget(present)
	return removed
}

// Reserved returns, by namespace, the reservations this replica counts
// (Countable; the kept ones of deleted objects included), as the informer
// holds the objects: for the summaries users read and the metrics.
func (s *Store) Reserved(ctx context.Context) (map[string][]reservation.Reservation, error) {
	var list gpuadmitv1.GPUReservationSetList
	if err := s.client.List(ctx, &list); err != nil {
		return nil, err
	}
	podsRV := s.watch.PodsResourceVersion()
	out := map[string][]reservation.Reservation{}
	add := func(ns string, st gpuadmitv1.GPUReservationSetStatus) {
		if rs := reservation.Countable(st, podsRV); len(rs) > 0 {
			out[ns] = rs
		}
	}
	seen := map[string]bool{}
	for i := range list.Items {
		u := s.copies.Newest(&list.Items[i])
		if u.Name != gpuadmitv1.ObjectName {
			continue // a team's (TeamReserved)
		}
		seen[u.Namespace] = true
		if reservation.Validate(u) != nil {
			continue
		}
		st, _ := s.lost.merge(u.Namespace, u.Status)
		add(u.Namespace, st)
	}
	for _, ns := range s.lost.namespaces() {
		if !seen[ns] {
			st, _ := s.lost.merge(ns, gpuadmitv1.GPUReservationSetStatus{})
			add(ns, st)
		}
	}
	return out, nil
}
