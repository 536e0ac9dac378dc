package ledger

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The ledger owns the team quotas (GPUClusterQuotas) as it owns the
// ResourceQuotas: the watch hands them in (UpsertClusterQuota), the
// ledger parses their limits like a ResourceQuota's keys and tells which
// namespaces each selects now (by labels or by name). A team's usage is
// the sum of its members' (Team): the namespaces the quota selects and
// those that left it within the grace, which the caller knows from the
// team's GPUReservationSet (pkg/admitqueue), and the ledger does not.

// TeamQuota is a GPUClusterQuota as the ledger reads it: the namespaces it
// selects and its limits, parsed like a ResourceQuota's (Limits.Quota
// names the GPUClusterQuota).
type TeamQuota struct {
	Name string
	UID  types.UID
	// Limits are, per family, the team's limits (spec.hard) over its
	// namespaces together; PerUser each user's (spec.perUser).
	Limits  map[string]Limits
	PerUser map[string]Limits
	// Problems are the keys not enforced as written (as a ResourceQuota's).
	Problems []Problem
}

// TeamSnapshot is a team's usage over the namespaces counted (Members),
// with the reservations handed in that the ledger has not recorded, and
// one user's part of it.
type TeamSnapshot struct {
	Quota   string   `json:"quota"`
	Members []string `json:"members"`
	// Used, Reserved and Unconfirmed are the team's, as a namespace's
	// (NamespaceSnapshot), summed over Members.
	Used        effective.Usage `json:"used"`
	Reserved    effective.Usage `json:"reserved"`
	Unconfirmed effective.Usage `json:"unconfirmed,omitempty"`
	// User is the user asked about ("" : none); UserUsed, UserReserved and
	// UserUnconfirmed are that user's part.
	User            string          `json:"user,omitempty"`
	UserUsed        effective.Usage `json:"userUsed,omitempty"`
	UserReserved    effective.Usage `json:"userReserved,omitempty"`
	UserUnconfirmed effective.Usage `json:"userUnconfirmed,omitempty"`
}

// teamQuota is a recorded GPUClusterQuota: its parsed limits and its
// selection.
type teamQuota struct {
	quota TeamQuota
	// selector is spec.namespaceSelector (nil: none, or unusable: it
	// selects nothing, and the quota's problems say why); names are
	// spec.namespaces.
	selector labels.Selector
	names    map[string]bool
}

// selects reports whether t selects namespace ns with labels (known: the
// namespace watch reported ns).
func (t *teamQuota) selects(ns string, nsLabels map[string]string, known bool) bool {
	if t.names[ns] {
		return true
	}
	return known && t.selector != nil && t.selector.Matches(labels.Set(nsLabels))
}

// UpsertClusterQuota records a GPUClusterQuota: its spec.hard and
// spec.perUser keys are read like a ResourceQuota's spec.hard
// (limits.<count, memory or cores name> of every governed family; a value
// in bytes on a memory key, or not whole, is enforced rounded down and
// reported; a negative one blocks its dimension), and every other key, and
// an unusable namespaceSelector, is reported (Problems): nothing it says
// is silently dropped.
func (l *Ledger) UpsertClusterQuota(q *gpuadmitv1.GPUClusterQuota) {
	t := l.parseTeam(q)
	l.mu.Lock()
	defer l.mu.Unlock()
	var before []Problem
	if old := l.teams[q.Name]; old != nil {
		before = old.quota.Problems
	}
	if !slices.Equal(before, t.quota.Problems) {
		for _, p := range t.quota.Problems {
			l.log.Info("GPUClusterQuota key not enforced as written", "quota", q.Name, "key", p.Key, "value", p.Value,
				"problem", p.Message)
		}
	}
	l.teams[q.Name] = t
}

// DeleteClusterQuota forgets the GPUClusterQuota name.
func (l *Ledger) DeleteClusterQuota(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.teams, name)
}

// TeamsOf returns the team quotas that select namespace ns now (by its
// labels or by name), sorted by name.
func (l *Ledger) TeamsOf(ns string) []TeamQuota {
	l.mu.RLock()
	defer l.mu.RUnlock()
	nsLabels, known := l.nsLabels[ns]
	var out []TeamQuota
	for _, t := range l.teams {
		if t.selects(ns, nsLabels, known) {
			out = append(out, t.quota.clone())
		}
	}
	slices.SortFunc(out, func(a, b TeamQuota) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ClusterQuota returns the team quota named name (false: none).
func (l *Ledger) ClusterQuota(name string) (TeamQuota, bool) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	t := l.teams[name]
	if t == nil {
		return TeamQuota{}, false
	}
	return t.quota.clone(), true
}

// ClusterQuotas returns every team quota, sorted by name.
func (l *Ledger) ClusterQuotas() []TeamQuota {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]TeamQuota, 0, len(l.teams))
	for _, t := range l.teams {
		out = append(out, t.quota.clone())
	}
	slices.SortFunc(out, func(a, b TeamQuota) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Selected returns the namespaces the team quota name selects now, sorted:
// those named in spec.namespaces (whether or not the namespace watch
// reported them: a namespace named is counted from its first pod), and
// those the namespace watch reported whose labels match its selector.
func (l *Ledger) Selected(name string) []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	t := l.teams[name]
	if t == nil {
		return nil
	}
	var out []string
	for ns := range t.names {
		out = append(out, ns)
	}
	if t.selector != nil {
		for ns, lbls := range l.nsLabels {
			if !t.names[ns] && t.selector.Matches(labels.Set(lbls)) {
				out = append(out, ns)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Team returns the team's usage over members, counting the pending
// reservations whose pods (or claims) it has not recorded, and user's part
// of it (by the user each record was charged to, Options.Users, and each
// reservation's User). A reservation counts in its own namespace
// (Reservation.Namespace) whether or not that namespace is among members:
// the caller hands in the team's, and counting one too many only
// over-counts.
func (l *Ledger) Team(q TeamQuota, members []string, pending []reservation.Reservation, user string) TeamSnapshot {
	s := TeamSnapshot{Quota: q.Name, Members: slices.Compact(slices.Sorted(slices.Values(members))), User: user}
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, ns := range s.Members {
		n := l.namespaces[ns]
		if n == nil {
			continue
		}
		s.Used, _ = s.Used.Add(n.used)
		if user != "" {
			s.UserUsed, _ = s.UserUsed.Add(n.byUser[user])
		}
	}
	byNS := map[string][]reservation.Reservation{}
	for _, r := range pending {
		byNS[r.Namespace] = append(byNS[r.Namespace], r)
	}
	rec := lockedRecords{l}
	for ns, rs := range byNS {
		t := reservation.Count(rs, ns, rec)
		s.Reserved, _ = s.Reserved.Add(t.Reserved)
		s.Unconfirmed, _ = s.Unconfirmed.Add(t.Unconfirmed)
		if user == "" {
			continue
		}
		mine := slices.DeleteFunc(slices.Clone(rs), func(r reservation.Reservation) bool { return r.User != user })
		t = reservation.Count(mine, ns, rec)
		s.UserReserved, _ = s.UserReserved.Add(t.Reserved)
		s.UserUnconfirmed, _ = s.UserUnconfirmed.Add(t.Unconfirmed)
	}
	return s
}

// UserUsage returns, per user, what the records of namespace ns are
// charged (Options.Users; "" for records of no known user).
func (l *Ledger) UserUsage(ns string) map[string]effective.Usage {
	l.mu.RLock()
	defer l.mu.RUnlock()
	n := l.namespaces[ns]
	if n == nil || len(n.byUser) == 0 {
		return nil
	}
	out := make(map[string]effective.Usage, len(n.byUser))
	for u, v := range n.byUser {
		out[u] = v.Clone()
	}
	return out
}

// clone copies q (nothing shared with the ledger).
func (q TeamQuota) clone() TeamQuota {
	q.Limits, q.PerUser, q.Problems = cloneLimits(q.Limits), cloneLimits(q.PerUser), slices.Clone(q.Problems)
	return q
}
