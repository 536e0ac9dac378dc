package summary

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Team is what a GPUClusterQuota's status says, before it is written as
// resource lists (and what the command line shows of a team): the team's
// usage, each counted namespace's part (a departed namespace still counted
// is departing) and each user's, users sorted by name.
type Team struct {
	Quota      ledger.TeamQuota
	Usage      ledger.TeamSnapshot
	Namespaces []Part
	Users      []Part
}

// Part is one namespace's or one user's part of a team's usage.
type Part struct {
	Name           string
	Used, Reserved effective.Usage
	Departing      bool
}

// teamRound writes the status of every GPUClusterQuota whose summary
// changed (and whose last write is MinGap old); it returns how many it
// wrote. A quota the ledger has not recorded yet is left as it is.
func (s *Summarizer) teamRound(ctx context.Context, now time.Time) int {
	var list gpuadmitv1.GPUClusterQuotaList
	if err := s.Client.List(ctx, &list); err != nil {
		if !s.teamListFailed {
			s.Log.Error(err, "listing the GPUClusterQuotas (their status is not written until this succeeds)")
		}
		s.teamListFailed = true
		return 0
	}
	s.teamListFailed = false
	seen := make(map[string]bool, len(list.Items))
	wrote := 0
	for i := range list.Items {
		gcq := &list.Items[i]
		seen[gcq.Name] = true
		q, ok := s.Ledger.ClusterQuota(gcq.Name)
		if !ok || now.Sub(s.lastTeam[gcq.Name]) < s.MinGap {
			continue
		}
		v, err := s.teamView(ctx, q)
		if err != nil {
			s.Log.Error(err, "reading a team's reservations", "clusterQuota", gcq.Name)
			continue
		}
		want := teamStatus(v, s.Ledger.Families(), gcq.Status.Conditions, now)
		want.ObservedGeneration = gcq.Generation
		if sameTeamStatus(gcq.Status, want) {
			continue
		}
		next := gcq.DeepCopy()
		next.Status = want
		// An update with the read resourceVersion (the chart grants update on
		// gpuclusterquotas/status, not patch): a conflict is written again
		// next round from a newer copy.
		if err := s.Client.Status().Update(ctx, next); err != nil {
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				s.Log.Error(err, "writing the GPUClusterQuota status", "clusterQuota", gcq.Name)
			}
			continue
		}
		if s.OnWrite != nil {
			s.OnWrite()
		}
		s.lastTeam[gcq.Name] = now
		wrote++
	}
	for name := range s.lastTeam {
		if !seen[name] {
			delete(s.lastTeam, name)
		}
	}
	return wrote
}

// teamView reads the team's object (its reservations and departures) and
// sums, from the ledger, the team's usage over the namespaces it counts,
// each namespace's part and each user's.
func (s *Summarizer) teamView(ctx context.Context, q ledger.TeamQuota) (Team, error) {
	var st gpuadmitv1.GPUReservationSetStatus
	if s.Namespace != "" {
		set := &gpuadmitv1.GPUReservationSet{}
		err := s.Client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: gpuadmitv1.TeamObjectName(q.Name)}, set)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return Team{}, fmt.Errorf("reading GPUReservationSet %s/%s: %w", s.Namespace, gpuadmitv1.TeamObjectName(q.Name), err)
		case reservation.Validate(set) == nil:
			st = set.Status
		}
	}
	// The summary has no pod watch of its own: every reservation not
	// recorded by this replica's ledger counts (the ledger leaves out those
	// whose pods it recorded).
	return TeamOf(s.Ledger, q, st, ""), nil
}

// TeamOf sums, from l, the team's usage over the namespaces it counts (by
// its quota q and its object's status st: Members), each namespace's part
// and each user's, counting the reservations of st that a ledger built
// from pods listed at podsRV must count (reservation.Countable).
func TeamOf(l *ledger.Ledger, q ledger.TeamQuota, st gpuadmitv1.GPUReservationSetStatus, podsRV string) Team {
	pending := reservation.Countable(st, podsRV)
	members, departing := Members(l.Selected(q.Name), st.Departures)
	v := Team{Quota: q, Usage: l.Team(q, members, pending, "")}
	for _, ns := range members {
		n := l.Namespace(ns, inNamespace(pending, ns))
		v.Namespaces = append(v.Namespaces, Part{Name: ns, Used: n.Used, Reserved: n.Reserved, Departing: departing[ns]})
	}
	for _, u := range usersOf(l, members, pending) {
		t := l.Team(q, members, pending, u)
		v.Users = append(v.Users, Part{Name: u, Used: t.UserUsed, Reserved: t.UserReserved})
	}
	return v
}

// Members are the namespaces a team counts: those its quota selects now
// and those its object lists as departed (still charged to it), sorted;
// departing marks the departed ones not selected again.
func Members(selected []string, departures []gpuadmitv1.Departure) (members []string, departing map[string]bool) {
	departing = map[string]bool{}
	members = slices.Clone(selected)
	for _, d := range departures {
		if d.Namespace != "" && !slices.Contains(selected, d.Namespace) && !departing[d.Namespace] {
			departing[d.Namespace] = true
			members = append(members, d.Namespace)
		}
	}
	slices.Sort(members)
	return slices.Compact(members), departing
}

// inNamespace keeps the team reservations of namespace ns.
func inNamespace(rs []reservation.Reservation, ns string) []reservation.Reservation {
	var out []reservation.Reservation
	for _, r := range rs {
		if r.Namespace == ns {
			out = append(out, r)
		}
	}
	return out
}

// usersOf lists the users charged in namespaces (by the ledger's records)
// or holding one of pending, sorted, without the unknown user "".
func usersOf(l *ledger.Ledger, namespaces []string, pending []reservation.Reservation) []string {
	set := map[string]bool{}
	for _, ns := range namespaces {
		for u := range l.UserUsage(ns) {
			set[u] = true
		}
	}
	for _, r := range pending {
		set[r.User] = true
	}
	delete(set, "")
	out := make([]string, 0, len(set))
	for u := range set {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// usersCell is "user=devices" of the largest users (by devices of the
// first family, used and reserved), largest first, at most five, then how
// many more.
func usersCell(parts []Part, fams []effective.Family) string {
	if len(fams) == 0 || len(parts) == 0 {
		return ""
	}
	sorted := largestFirst(parts, fams)
	cells := make([]string, 0, min(len(sorted), 5))
	for _, p := range sorted[:min(len(sorted), 5)] {
		cells = append(cells, fmt.Sprintf("%s=%d", p.Name, devices(p, fams)))
	}
	out := joinCells(cells)
	if len(sorted) > 5 {
		out += fmt.Sprintf(" (+%d more)", len(sorted)-5)
	}
	return boundedUsers(out)
}

// devices is what p is charged in devices of the first family (used and
// reserved).
func devices(p Part, fams []effective.Family) int64 {
	if len(fams) == 0 {
		return 0
	}
	return p.Used.Of(fams[0].Name).GPU + p.Reserved.Of(fams[0].Name).GPU
}

// largestFirst sorts a copy of parts by devices, largest first, then by
// name.
func largestFirst(parts []Part, fams []effective.Family) []Part {
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b Part) int {
		return cmp.Or(cmp.Compare(devices(b, fams), devices(a, fams)), cmp.Compare(a.Name, b.Name))
	})
	return sorted
}

// namespaceUsers is the printer cell of a namespace's users: each user
// charged in ns or holding one of pending, with its devices.
func namespaceUsers(l *ledger.Ledger, ns string, pending []reservation.Reservation) string {
	pending = slices.Clone(pending)
	for i := range pending { // a namespace's own object does not name it
		pending[i].Namespace = ns
	}
	users := usersOf(l, []string{ns}, pending)
	if len(users) == 0 {
		return ""
	}
	parts := make([]Part, 0, len(users))
	for _, u := range users {
		t := l.Team(ledger.TeamQuota{}, []string{ns}, pending, u)
		parts = append(parts, Part{Name: u, Used: t.UserUsed, Reserved: t.UserReserved})
	}
	return usersCell(parts, l.Families())
}

// sameTeamStatus compares two statuses, conditions without their times.
func sameTeamStatus(a, b gpuadmitv1.GPUClusterQuotaStatus) bool {
	a, b = *a.DeepCopy(), *b.DeepCopy()
	for i := range a.Conditions {
		a.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	for i := range b.Conditions {
		b.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return equality.Semantic.DeepEqual(a, b)
}
