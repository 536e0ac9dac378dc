package admitqueue

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// decideInOrder decides each review still undecided against st (the
// object's status as this round will write it) and the teams counting the
// namespace, adding the reservations to st and to the teams' objects; the reviews that waited in the last round go first, the smallest
// first (settle.go), and the room each review that waits waits for is held
// for it (counted, as unconfirmed, for every review after it). It returns
// how many reservations it added.
func (s *Store) decideInOrder(ns string, reviews []*review, st *gpuadmitv1.GPUReservationSetStatus, teams []*team, conflicts int) int {
	smallestWaitingFirst(reviews)
	for _, r := range reviews {
		r.outcome, r.result, r.err, r.blockers = undecided, decision.Result{}, nil, nil
	}
	n := 0
	var held []reservation.Reservation
	for _, r := range reviews {
		if err := r.ctx.Err(); err != nil {
			r.outcome, r.err = failed, err // answered already: nothing to decide
			if conflicts > 0 {
				r.err = gaveUp(ns, conflicts, err)
			}
			continue
		}
		r.outcome, r.err = s.decideOne(ns, r, st, teams, held)
		switch r.outcome {
		case waiting:
			if !r.req.DryRun { // a dry run is never admitted: it holds no room for itself
				held = append(held, heldFor(r))
			}
		case reserving:
			n++
		}
	}
	return n
}

// decideOne decides r with the reservations of st it must count (and the
// room held for the reviews that wait before it), refusing what a forged or
// repeated review could use to take or shrink a reservation, and adds r's
// reservation to st.
func (s *Store) decideOne(ns string, r *review, st *gpuadmitv1.GPUReservationSetStatus, teams []*team, held []reservation.Reservation) (outcome, error) {
	if reservation.IsHoldKey(r.uid) {
		s.metrics.Refused(RefusedDuplicate)
		return failed, fmt.Errorf("review key %s has the form of a gang's hold key in GPUReservationSet %s/%s (gang/KIND/NAME), which no pod's UID has: the review is not the API server's; nothing is reserved", r.uid, ns, gpuadmitv1.ObjectName)
	}
	if s.ledger.Seen(r.uid) != "" {
		s.metrics.Refused(RefusedDuplicate)
		return failed, fmt.Errorf("pod UID %s is already a recorded pod of namespace %s: a create review for it is not the API server's; nothing is reserved", r.uid, ns)
	}
	turn, err := s.gangTurnOf(ns, r, st)
	if err != nil {
		r.result = gangDenial(err)
		return decided, nil
	}
	res, err := s.decide(ns, r, turn, st, teams, held)
	r.result = res
	prior := slices.IndexFunc(st.Reservations, func(x gpuadmitv1.Reservation) bool { return x.PodUID == r.uid })
	switch {
	case err != nil:
		return failed, err
	case !res.Allowed && res.FitsWithoutUnconfirmed:
		return s.waitOrDecide(r, st, teams)
	case !reserves(r.req, res):
		return decided, nil
	case prior >= 0:
		return s.again(ns, r, st.Reservations[prior], res.Reserve)
	case s.opts.MaxReservations > 0 && len(st.Reservations) >= s.opts.MaxReservations:
		if s.waitAtCap(r, st) {
			return waiting, nil
		}
		s.metrics.Refused(RefusedLimit)
		return failed, fmt.Errorf("GPUReservationSet %s/%s holds %d reservations of admitted pods that the watches have not recorded yet, its limit (admission.reservations.maxPerNamespace); "+
			"they end as their pods are recorded or found absent: create the pod again shortly", ns, gpuadmitv1.ObjectName, len(st.Reservations))
	}
	demand, others := reservation.DemandOf(res.Reserve) // a pod's containers' alone: its templates' claims reserve at their own CREATE
	if err := s.teamPrior(ns, r, teams, demand, others); err != nil {
		return failed, err
	}
	if err := s.teamRoom(r, teams); err != nil {
		return failed, err
	}
	s.reserveInTeams(ns, r, teams, demand, others)
	st.Reservations = append(st.Reservations, gpuadmitv1.Reservation{PodUID: r.uid, PodName: podName(r.req), ClaimName: claimName(r.req),
		Demand: demand, Families: others, User: chargedUser(r.req), // its user goes with it when the namespace joins a team (teamjoin.go)
		Writer: s.opts.Replica, AdmittedAt: metav1.NewTime(s.opts.Clock.Now())})
	s.holdGang(r, turn, st, res.Reserve)
	s.confirmer.DueAt(r.uid) // its absence check is scheduled from now
	return reserving, nil
}

// decide decides r counting the reservations of st (but its own: decided
// as if an earlier review of this pod had not reserved) and the room held
// for the reviews that wait before it, and, for each team, the team's
// (teamRequests); a gang's pod counts its gang's
// hold as turn says, and a gang's first pod that fits on its own must fit
// with its whole gang too (only that denial names the gang).
func (s *Store) decide(ns string, r *review, turn gangTurn, st *gpuadmitv1.GPUReservationSetStatus, teams []*team, held []reservation.Reservation) (decision.Result, error) {
	req := r.req
	req.Reservations = append(gangReservations(turn, st, s.countable(*st, r.uid)), held...)
	req.Teams = s.teamRequests(teams, ns, r.uid, held)
	res, err := s.decider.Decide(r.ctx, req)
	switch {
	case err != nil || !turn.first() || !res.Allowed:
		return res, err // a first pod denied on its own keeps its own denial
	case res.Reserve.IsZero():
		return res, nil
	}
	return s.decideWhole(r, req, turn, st, res)
}

// reserves reports whether res admits a pod whose demand is to be
// reserved: allowed, not a dry run, not a pod without demand of its own.
func reserves(req decision.Request, res decision.Result) bool {
	return res.Allowed && !res.Reserve.IsZero() && !req.DryRun
}

func podName(req decision.Request) string {
	if req.Pod == nil || req.Claim != nil {
		return ""
	}
	return req.Pod.Name
}

// claimName is the name of a claim's review ("" for a pod's).
func claimName(req decision.Request) string {
	if req.Claim == nil {
		return ""
	}
	return req.Claim.Name
}

// countable returns the reservations of st this replica counts, but the
// one of pod except (a pod's or claim's: a gang's hold is always counted,
// whatever key the review has).
func (s *Store) countable(st gpuadmitv1.GPUReservationSetStatus, except types.UID) []reservation.Reservation {
	rs := reservation.Countable(st, s.watch.PodsResourceVersion())
	return slices.DeleteFunc(rs, func(r reservation.Reservation) bool { return !r.Hold && r.UID == except })
}

// again answers a second review of a pod already reserved: the API
// server's retry of the same review (same name, same demand) is allowed
// with the reservation it has; anything else is refused, and the
// reservation stays as it was.
func (s *Store) again(ns string, r *review, prior gpuadmitv1.Reservation, demand effective.Usage) (outcome, error) {
	if prior.PodName == podName(r.req) && prior.ClaimName == claimName(r.req) && reservation.UsageOf(prior).Equal(demand) {
		return decided, nil
	}
	s.metrics.Refused(RefusedDuplicate)
	return failed, fmt.Errorf("pod UID %s is already reserved in GPUReservationSet %s/%s as pod %q with %s; a review for the same UID with pod %q and %s is refused (a review never replaces a reservation)",
		r.uid, ns, gpuadmitv1.ObjectName, prior.PodName, reservation.UsageOf(prior), podName(r.req), demand)
}
