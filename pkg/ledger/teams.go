package ledger

import (
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

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

// UpsertClusterQuota records a GPUClusterQuota (issue 46: implemented by
// the decide area).
func (l *Ledger) UpsertClusterQuota(q *gpuadmitv1.GPUClusterQuota) { _ = q }

// DeleteClusterQuota forgets the GPUClusterQuota name.
func (l *Ledger) DeleteClusterQuota(name string) { _ = name }

// TeamsOf returns the team quotas that select namespace ns now (by its
// labels or by name), sorted by name.
func (l *Ledger) TeamsOf(ns string) []TeamQuota { _ = ns; return nil }

// ClusterQuota returns the team quota named name (false: none).
func (l *Ledger) ClusterQuota(name string) (TeamQuota, bool) { _ = name; return TeamQuota{}, false }

// Selected returns the namespaces the team quota name selects now
// (by labels or by name, among the namespaces the watch reported), sorted.
func (l *Ledger) Selected(name string) []string { _ = name; return nil }

// Team returns the team's usage over members, counting the pending
// reservations whose pods (or claims) it has not recorded, and user's part
// of it (by the user each record was charged to, Options.Users, and each
// reservation's User).
func (l *Ledger) Team(q TeamQuota, members []string, pending []reservation.Reservation, user string) TeamSnapshot {
	_, _ = pending, user
	return TeamSnapshot{Quota: q.Name, Members: members}
}
