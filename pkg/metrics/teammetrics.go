package metrics

import (
	"context"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// TeamLedger is what the team collector reads of the ledger
// (*ledger.Ledger).
type TeamLedger interface {
	Families() []effective.Family
	ClusterQuotas() []ledger.TeamQuota
	Selected(name string) []string
	Team(q ledger.TeamQuota, members []string, pending []reservation.Reservation, user string) ledger.TeamSnapshot
}

// TeamReservations lists, by quota name, the reservations the teams'
// GPUReservationSets hold as this replica counts them
// (*admitqueue.Store).
type TeamReservations interface {
	TeamReserved(ctx context.Context) (map[string][]reservation.Reservation, error)
}

// teamCollector exposes, per team quota (GPUClusterQuota), at scrape
// time:
//
//   - gpuadmit_team_quota{quota, resource, type="hard|used|reserved"}:
//     the team's limit (spec.hard; 0 while its value is invalid), what the
//     recorded pods and claims of its namespaces use together and what its
//     admitted ones not recorded yet hold; memory in MiB. Only limited
//     resources have series: at most quotas × families × 3 × 3.
//   - gpuadmit_team_over_limit{quota, resource}: by how much the team's
//     used + reserved passes a limit, when it does (a quota lowered or
//     created under what was admitted).
//
// A team's namespaces are those its quota selects and those of its
// reservations (a namespace that left the team and holds none is counted
// by the admission round and the quota's status until its grace ends,
// not here).
type teamCollector struct {
	ledger      TeamLedger
	store       TeamReservations
	quota, over *prometheus.Desc
}

// RegisterTeams registers the team collector.
func RegisterTeams(reg prometheus.Registerer, l TeamLedger, store TeamReservations) error {
	if err := reg.Register(newTeamCollector(l, store)); err != nil {
		return fmt.Errorf("registering team metrics: %w", err)
	}
	return nil
}

func newTeamCollector(l TeamLedger, store TeamReservations) *teamCollector {
	return &teamCollector{ledger: l, store: store,
		quota: prometheus.NewDesc("gpuadmit_team_quota",
			"A team quota's (GPUClusterQuota's) limit on a resource (hard; 0 while its value is invalid), what the recorded pods and claims of its namespaces use together (used) and what its admitted ones not recorded yet hold (reserved); memory in MiB.",
			[]string{"quota", "resource", "type"}, nil),
		over: prometheus.NewDesc("gpuadmit_team_over_limit",
			"By how much a team quota's used + reserved passes its limit on a resource, when it does: a GPUClusterQuota lowered or created under what was admitted; memory in MiB. No series while within the limit.",
			[]string{"quota", "resource"}, nil)}
}

func (c *teamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.quota
	ch <- c.over
}

func (c *teamCollector) Collect(ch chan<- prometheus.Metric) {
	quotas := c.ledger.ClusterQuotas()
	if len(quotas) == 0 {
		return
	}
	pending, err := c.store.TeamReserved(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.quota, fmt.Errorf("reading the teams' reservations: %w", err))
		return
	}
	fams := c.ledger.Families()
	for _, q := range quotas {
		members := c.ledger.Selected(q.Name)
		for _, r := range pending[q.Name] {
			if r.Namespace != "" && !slices.Contains(members, r.Namespace) {
				members = append(members, r.Namespace)
			}
		}
		t := c.ledger.Team(q, members, pending[q.Name], "")
		for i := range fams {
			f := &fams[i]
			for _, d := range effective.Dimensions() {
				l, name := q.Limits[f.Name].Of(d), string(f.Names.Of(d))
				if l == nil || name == "" {
					continue
				}
				used, reserved := t.Used.Of(f.Name).Get(d), t.Reserved.Of(f.Name).Get(d)
				gauge(ch, c.quota, l.Value, q.Name, name, "hard")
				gauge(ch, c.quota, used, q.Name, name, "used")
				gauge(ch, c.quota, reserved, q.Name, name, "reserved")
				if used+reserved > l.Value {
					gauge(ch, c.over, used+reserved-l.Value, q.Name, name)
				}
			}
		}
	}
}
