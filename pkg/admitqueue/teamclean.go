package admitqueue

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The teams' objects are tidied by the cleaner too, outside the
// namespaces' queues: every second the replica that owns a team object
// (Membership.Owner of its key) confirms the absence of its due entries by
// reading each pod in the entry's own namespace, removes what tidy ends,
// brings the members and departures up to date (departures.go) and writes
// the object when anything changed, creating it for a team quota that
// selects namespaces and has none (so that its members are written before
// any of them can leave). A write that conflicts with an admission round
// is tried again at the next tick. A team object deleted by hand keeps its
// reservations, members and departures in every replica (as a namespace's,
// repair.go) until a write brings them back.

// teamDeleted keeps a deleted team object's reservations, members and
// departures (the GPUReservationSet delete handler's, for a team's).
func (s *Store) teamDeleted(u *gpuadmitv1.GPUReservationSet) {
	name, ok := strings.CutPrefix(u.Name, gpuadmitv1.TeamObjectPrefix)
	if !ok || u.Namespace != s.opts.Namespace {
		return
	}
	s.opts.Log.Info("a team's GPUReservationSet was deleted while it held reservations, members or departures: they are kept and the object is recreated",
		"quota", name, "reservations", len(u.Status.Reservations), "members", len(u.Status.Members), "departures", len(u.Status.Departures))
	s.lostTeams.mu.Lock()
	defer s.lostTeams.mu.Unlock()
	s.lostTeams.m[name] = merged(u.Status, s.lostTeams.m[name])
}

// cleanTeams is Clean's part for the teams (see above): it confirms due
// entries within budget, notes every entry in present, and tidies each
// team object this replica owns. It returns how many entries it removed.
func (s *Store) cleanTeams(ctx context.Context, items []gpuadmitv1.GPUReservationSet, present map[types.UID]bool, budget *int) int {
	if s.teams == nil {
		return 0
	}
	names := s.ownedTeams(ctx, items, present, budget)
	removed := 0
	for _, name := range slices.Sorted(maps.Keys(names)) {
		jctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		n, err := s.tidyTeam(jctx, name)
		cancel()
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			s.opts.Log.Error(err, "cleaning a team's GPUReservationSet", "quota", name)
		}
		removed += n
	}
	return removed
}

// ownedTeams returns the team quotas whose objects this replica tidies:
// of the team objects (items, confirming their due entries within budget
// and noting every entry in present), the kept ones of deleted objects and
// the team quotas.
func (s *Store) ownedTeams(ctx context.Context, items []gpuadmitv1.GPUReservationSet, present map[types.UID]bool, budget *int) map[string]bool {
	names := map[string]bool{}
	for i := range items {
		u := s.copies.Newest(&items[i])
		name, ok := strings.CutPrefix(u.Name, gpuadmitv1.TeamObjectPrefix)
		if !ok || u.Namespace != s.opts.Namespace || reservation.Validate(u) != nil {
			continue
		}
		for _, r := range u.Status.Reservations {
			present[r.PodUID] = true
		}
		if s.ownsTeam(name) {
			names[name] = true
			*budget -= s.confirmer.ConfirmDue(ctx, u, *budget)
		}
	}
	for _, name := range s.lostTeams.namespaces() {
		if s.ownsTeam(name) {
			names[name] = true
		}
	}
	for _, q := range s.teams.ClusterQuotas() {
		if s.ownsTeam(q.Name) {
			names[q.Name] = true
		}
	}
	return names
}

// ownsTeam reports whether this replica tidies team quota name's object.
func (s *Store) ownsTeam(name string) bool {
	_, self := s.members.Owner(s.teamKey(name).String())
	return self
}

// tidyTeam tidies team quota name's object and writes it when anything
// changed; it returns how many entries the write removed.
func (s *Store) tidyTeam(ctx context.Context, name string) (int, error) {
	t, err := s.loadTeam(ctx, name, "")
	if err != nil || !t.dirty() {
		return 0, err
	}
	if err := s.writeObject(ctx, t.key, t.obj, t.status, 0); err != nil {
		return 0, err
	}
	if t.kept {
		s.lostTeams.forget(name)
	}
	return s.countEnded(t.ended), nil
}

// TeamReserved returns, by team quota, the team's reservations this
// replica counts (Countable; the kept ones of a deleted object included),
// as the informer holds the objects: for the team quotas' summaries and
// the metrics.
func (s *Store) TeamReserved(ctx context.Context) (map[string][]reservation.Reservation, error) {
	var list gpuadmitv1.GPUReservationSetList
	if err := s.client.List(ctx, &list, client.InNamespace(s.opts.Namespace)); err != nil {
		return nil, err
	}
	podsRV := s.watch.PodsResourceVersion()
	out := map[string][]reservation.Reservation{}
	seen := map[string]bool{}
	add := func(name string, st gpuadmitv1.GPUReservationSetStatus) {
		if rs := reservation.Countable(st, podsRV); len(rs) > 0 {
			out[name] = rs
		}
	}
	for i := range list.Items {
		u := s.copies.Newest(&list.Items[i])
		name, ok := strings.CutPrefix(u.Name, gpuadmitv1.TeamObjectPrefix)
		if !ok || reservation.Validate(u) != nil {
			continue
		}
		seen[name] = true
		st, _ := s.lostTeams.merge(name, u.Status)
		add(name, st)
	}
	for _, name := range s.lostTeams.namespaces() {
		if !seen[name] {
			st, _ := s.lostTeams.merge(name, gpuadmitv1.GPUReservationSetStatus{})
			add(name, st)
		}
	}
	return out, nil
}
