package admitqueue

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Team quotas (GPUClusterQuota). A team's reservations are in one
// GPUReservationSet of gpuadmit's own namespace (gpuadmitv1.TeamObjectName),
// written with compare and swap like a namespace's. A round in namespace N
// loads N's object and the object of every team that counts N, decides
// each review against all of them, and writes the team objects first, in
// the order of their names, then N's; a review is answered "allowed" only
// once every write succeeded. Any conflict starts the round again: no
// lock is held, so nothing can deadlock.
//
//	load ──▶ N's object; each team counting N: its object (after a
//	         conflict on it: from the API server), a deleted one's kept
//	         reservations merged, tidied, its departures brought up to date,
//	         a joining member's own entries copied in (teamjoin.go)
//	decide ▶ each review counting, per team, the team's reservations (but
//	         its own) and those the round added before it
//	write ─▶ the teams' objects in name order, then N's; a conflict on any:
//	         the whole round again (a team entry already written for a
//	         review is its own: not counted against it, not added twice)
//
// A team entry whose pod never comes (N's write failed, or the replica
// died between the writes) is an unconfirmed reservation like any other:
// counted until a watch records its pod or a read in its namespace finds
// it absent. Failures over-count, for seconds; they never under-count.

// TeamQuotas is what the store asks about the team quotas
// (*ledger.Ledger).
type TeamQuotas interface {
	// TeamsOf lists the team quotas selecting namespace ns now.
	TeamsOf(ns string) []ledger.TeamQuota
	// ClusterQuota returns the team quota name (false: none).
	ClusterQuota(name string) (ledger.TeamQuota, bool)
	// ClusterQuotas lists every team quota.
	ClusterQuotas() []ledger.TeamQuota
	// Selected lists the namespaces the team quota name selects now.
	Selected(name string) []string
	// Charges lists what the objects of namespace ns are charged.
	Charges(ns string) []ledger.Charge
}

// team is one team quota as a round works on it.
type team struct {
	quota  ledger.TeamQuota
	key    client.ObjectKey
	obj    *gpuadmitv1.GPUReservationSet      // as read; nil when there is none
	status gpuadmitv1.GPUReservationSetStatus // tidied, with the round's entries
	kept   bool                               // a deleted object's reservations were merged in
	ended  []string                           // what tidy ended (EndRecorded, EndAbsent, "")
	moved  bool                               // members or departures changed
	added  int                                // entries the round added
}

// dirty reports whether the round must write t.
func (t *team) dirty() bool {
	return t.added > 0 || t.moved || len(t.ended) > 0 ||
		t.kept && (len(t.status.Reservations) > 0 || len(t.status.Departures) > 0 || len(t.status.Members) > 0)
}

func (s *Store) teamKey(quota string) client.ObjectKey {
	return client.ObjectKey{Namespace: s.opts.Namespace, Name: gpuadmitv1.TeamObjectName(quota)}
}

// teamsCounting returns the names of the team quotas that may count
// namespace ns, sorted: those selecting it now, and those whose object
// lists it as a member (it departed, or left since the last write).
func (s *Store) teamsCounting(ctx context.Context, ns string) ([]string, error) {
	if s.teams == nil {
		return nil, nil
	}
	names := map[string]bool{}
	for _, q := range s.teams.TeamsOf(ns) {
		names[q.Name] = true
	}
	var list gpuadmitv1.GPUReservationSetList
	if err := s.client.List(ctx, &list, client.InNamespace(s.opts.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the teams' GPUReservationSets in %s: %w", s.opts.Namespace, err)
	}
	for i := range list.Items {
		u := s.copies.Newest(&list.Items[i])
		if q, ok := strings.CutPrefix(u.Name, gpuadmitv1.TeamObjectPrefix); ok && lists(u.Status, ns) {
			names[q] = true
		}
	}
	for _, q := range s.lostTeams.namespaces() {
		if st, _ := s.lostTeams.merge(q, gpuadmitv1.GPUReservationSetStatus{}); lists(st, ns) {
			names[q] = true
		}
	}
	return slices.Sorted(maps.Keys(names)), nil
}

// lists reports whether a team's status names ns as a member or a
// departure.
func lists(st gpuadmitv1.GPUReservationSetStatus, ns string) bool {
	return slices.Contains(st.Members, ns) || slices.ContainsFunc(st.Departures, func(d gpuadmitv1.Departure) bool { return d.Namespace == ns })
}

// loadTeams loads, tidies and brings up to date the objects of the team
// quotas named (sorted), keeping those that count ns. A quota that does
// not exist (deleted) limits nothing.
func (s *Store) loadTeams(ctx context.Context, ns string, names []string, try *attempt) ([]*team, error) {
	var out []*team
	for _, name := range names {
		q, ok := s.teams.ClusterQuota(name)
		if !ok {
			continue
		}
		refused := ""
		if try.teamRefused == name {
			refused = try.teamRV
		}
		t, err := s.loadTeam(ctx, name, refused)
		if err != nil {
			return nil, err
		}
		t.quota = q
		if !slices.Contains(t.status.Members, ns) {
			continue // it left, and its departure ended
		}
		for _, m := range t.status.Members {
			if err := s.proveFresh(ctx, m); err != nil {
				return nil, fmt.Errorf("GPUClusterQuota %q: %w", name, err)
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// loadTeam reads team quota name's object (after a conflict on it,
// refused: once newer than the refused write), merges a deleted one's
// kept reservations, waits for the pod watch to pass its removals, tidies
// it, brings its members and departures up to date and copies in the
// entries of the namespaces that joined (adopt).
func (s *Store) loadTeam(ctx context.Context, name, refused string) (*team, error) {
	key := s.teamKey(name)
	u, err := s.readObject(ctx, key, refused)
	if err != nil {
		return nil, err
	}
	t := &team{key: key, obj: u}
	if u != nil {
		if err := reservation.Validate(u); err != nil {
			return nil, fmt.Errorf("%w; the GPU pods of GPUClusterQuota %q's namespaces are refused until it is fixed or deleted", err, name)
		}
		t.status = *u.Status.DeepCopy()
	}
	t.status, t.kept = s.lostTeams.merge(name, t.status)
	if err := s.caughtUp(ctx, key, t.status.RemovedResourceVersion); err != nil {
		return nil, err
	}
	t.ended, _ = s.tidy(key.Name, &t.status)
	prior := slices.Clone(t.status.Members)
	t.moved = s.departures(name, &t.status)
	adopted, err := s.adopt(ctx, prior, &t.status) // the joining members' entries (teamjoin.go)
	if err != nil {
		return nil, fmt.Errorf("GPUClusterQuota %q: %w", name, err)
	}
	t.moved = t.moved || adopted > 0
	return t, nil
}

// teamRequests are the decision's Teams for review uid of namespace ns:
// per team, the reservations this replica counts (but uid's own) and the
// room held for the reviews that wait before it.
func (s *Store) teamRequests(teams []*team, ns string, uid types.UID, held []reservation.Reservation) []decision.Team {
	out := make([]decision.Team, 0, len(teams))
	for _, t := range teams {
		rs := s.countable(t.status, uid)
		for _, h := range held {
			h.Namespace = ns
			rs = append(rs, h)
		}
		out = append(out, decision.Team{Quota: t.quota, Members: slices.Clone(t.status.Members), Reservations: rs})
	}
	return out
}

// teamPrior checks the entries the teams already hold for review r: one
// a failed round wrote for it (same namespace, name and demand) is its
// own; any other is refused (a review never replaces a reservation).
func (s *Store) teamPrior(ns string, r *review, teams []*team, d gpuadmitv1.Demand, others map[string]gpuadmitv1.Demand) error {
	want := gpuadmitv1.Reservation{Demand: d, Families: others}
	for _, t := range teams {
		i := slices.IndexFunc(t.status.Reservations, func(x gpuadmitv1.Reservation) bool { return x.PodUID == r.uid })
		if i < 0 {
			continue
		}
		prior := t.status.Reservations[i]
		if prior.Namespace != ns || prior.PodName != podName(r.req) || prior.ClaimName != claimName(r.req) ||
			!reservation.UsageOf(prior).Equal(reservation.UsageOf(want)) {
			s.metrics.Refused(RefusedDuplicate)
			return fmt.Errorf("pod UID %s is already reserved in GPUReservationSet %s as %s/%s with %s; a review for the same UID in %s with %q and %s is refused (a review never replaces a reservation)",
				r.uid, t.key, prior.Namespace, cmp.Or(prior.PodName, prior.ClaimName), reservation.UsageOf(prior), ns, cmp.Or(podName(r.req), claimName(r.req)), reservation.UsageOf(want))
		}
	}
	return nil
}

// teamCapFactor: a team's object holds at most this many times
// admission.reservations.maxPerNamespace entries (2000 by default, at most
// ~400 bytes each), so that reviews in many namespaces of one team cannot
// grow it toward etcd's object limit (every write of it would then fail,
// refusing the whole team's GPU pods).
const teamCapFactor = 4

// teamRoom refuses review r when a team object that lacks its entry holds
// the most it may (teamCapFactor); its entries end as their pods are
// recorded or found absent.
func (s *Store) teamRoom(r *review, teams []*team) error {
	limit := teamCapFactor * s.opts.MaxReservations
	for _, t := range teams {
		if limit <= 0 || len(t.status.Reservations) < limit ||
			slices.ContainsFunc(t.status.Reservations, func(x gpuadmitv1.Reservation) bool { return x.PodUID == r.uid }) {
			continue
		}
		s.metrics.Refused(RefusedLimit)
		return fmt.Errorf("GPUReservationSet %s holds %d reservations of the team's admitted pods that the watches have not recorded yet, its limit (%d x admission.reservations.maxPerNamespace); "+
			"they end as their pods are recorded or found absent: create the pod again shortly", t.key, len(t.status.Reservations), teamCapFactor)
	}
	return nil
}

// reserveInTeams adds review r's entry to every team that lacks it.
func (s *Store) reserveInTeams(ns string, r *review, teams []*team, d gpuadmitv1.Demand, others map[string]gpuadmitv1.Demand) {
	for _, t := range teams {
		if slices.ContainsFunc(t.status.Reservations, func(x gpuadmitv1.Reservation) bool { return x.PodUID == r.uid }) {
			continue // written by a round that failed after it: its own
		}
		t.status.Reservations = append(t.status.Reservations, gpuadmitv1.Reservation{PodUID: r.uid, PodName: podName(r.req),
			ClaimName: claimName(r.req), Demand: d, Families: others, Namespace: ns, User: chargedUser(r.req),
			Writer: s.opts.Replica, AdmittedAt: metav1.NewTime(s.opts.Clock.Now())})
		t.added++
	}
}

// chargedUser is who the request's pod or claim is charged to.
func chargedUser(req decision.Request) string {
	return cmp.Or(req.ChargedUser, req.User.Username)
}

// writeTeams writes, in name order, the team objects the round changed.
// On a conflict it notes which object refused (the next round reads it
// once newer) and returns the error.
func (s *Store) writeTeams(ctx context.Context, teams []*team, try *attempt) error {
	for _, t := range teams {
		if !t.dirty() {
			continue
		}
		rv := "0"
		if t.obj != nil {
			rv = t.obj.ResourceVersion
		}
		name := strings.TrimPrefix(t.key.Name, gpuadmitv1.TeamObjectPrefix)
		if err := s.writeObject(ctx, t.key, t.obj, t.status, t.added); err != nil {
			try.teamRefused, try.teamRV = name, rv
			return err
		}
		if t.kept {
			s.lostTeams.forget(name)
		}
		s.countEnded(t.ended)
	}
	return nil
}

// teamsChanged returns the error of a review the decider refused because
// a team quota selects the namespace that the round did not load
// (decision.ErrTeamsChanged: its labels or the quota changed since the
// round listed the teams); nil when there is none.
func teamsChanged(reviews []*review) error {
	for _, r := range reviews {
		if r.outcome == failed && errors.Is(r.err, decision.ErrTeamsChanged) {
			return r.err
		}
	}
	return nil
}
