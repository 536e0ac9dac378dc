package admitqueue

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// A namespace that joins a team (its labels changed, or a GPUClusterQuota
// was created or edited to select it) may have pods admitted before it
// joined whose reservations are only in its own object: the team counts
// its members' recorded pods and its own object's entries, so those pods,
// not recorded yet, would count for nothing on the team's side. The first
// write that lists a namespace as a member therefore copies the countable
// entries of the namespace's own object (read from the API server, with
// the kept ones of a deleted object) into the team's, with the namespace
// set: the team's compare-and-swap write makes them durable, and they end
// like any team entry (recorded, or found absent in their namespace).
//
//	member not in the object's members ──▶ its own object's entries copied
//	                                       (those the team lacks, by UID)
//	                                       into the team's, then decided
//
// What remains: a pod admitted in the namespace by a replica that had not
// seen it join, after the joining write read the namespace's object, is
// counted on the team's side only once a watch records it (seconds). A
// copied entry keeps the user the namespace's entry names (the user the
// review was charged to), for the team's per-user limits.

// adopt copies into team status st the entries of the own objects of the
// members that were not in prior (the members the object held as read).
func (s *Store) adopt(ctx context.Context, prior []string, st *gpuadmitv1.GPUReservationSetStatus) (int, error) {
	have := make(map[string]bool, len(st.Reservations))
	for _, r := range st.Reservations {
		have[string(r.PodUID)] = true
	}
	n := 0
	for _, ns := range st.Members {
		if slices.Contains(prior, ns) {
			continue
		}
		own, err := s.ownEntries(ctx, ns)
		if err != nil {
			return n, err
		}
		for _, r := range own {
			if have[string(r.PodUID)] {
				continue
			}
			have[string(r.PodUID)] = true
			r.Namespace = ns
			st.Reservations = append(st.Reservations, r)
			n++
		}
	}
	return n, nil
}

// ownEntries returns the pods' and claims' entries of namespace ns's own
// object, with the kept ones of a deleted object. The object is read from
// the API server, not the informer: a copy behind another replica's last
// write would copy nothing, and the namespace, a member from then on, is
// never adopted again (TestTeamJoinReadsTheNamespaceLive). It is read
// once per join.
func (s *Store) ownEntries(ctx context.Context, ns string) ([]gpuadmitv1.Reservation, error) {
	u, err := s.get(ctx, s.api, nsObject(ns))
	switch {
	case apierrors.IsNotFound(err):
		u, err = nil, nil
	case err == nil:
		u = s.copies.Newest(u)
		err = reservation.Validate(u)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the reservations of namespace %s, which joins a team quota: %w", ns, err)
	}
	var st gpuadmitv1.GPUReservationSetStatus
	if u != nil {
		st = *u.Status.DeepCopy()
	}
	st, _ = s.lost.merge(ns, st)
	return st.Reservations, nil
}
