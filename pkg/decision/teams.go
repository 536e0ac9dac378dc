package decision

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// A team quota (GPUClusterQuota) limits the namespaces it counts together,
// and each user within them. The request names the teams that count its
// namespace (Request.Teams, with their members and reservations); the
// decision reads each one's usage from the ledger (ledger.Team) for the
// user the pod is charged to, and hands the policies one entry per limit
// (input.teamLimits). The pod must fit every one beside its namespace's
// quotas: the tightest wins, and every limit it passes is reported.

// teamCheck is one limited dimension of one team quota, with what the
// team (or, perUser, the user) uses and reserves of it.
type teamCheck struct {
	quota, family string
	dim           effective.Dimension
	limit         ledger.Limit
	perUser       bool
	user          string
	members       []string
	// used, reserved and unconfirmed are the dimension's (unconfirmed is
	// part of reserved).
	used, reserved, unconfirmed int64
}

// ErrTeamsChanged is returned when a team quota selects the request's
// namespace now (by its labels, which may have been unknown when the
// caller listed the teams, or by a quota created since) and the request
// does not count it: deciding without it could admit past its limits. The
// caller lists the teams again (a new admission round) and retries.
var ErrTeamsChanged = errors.New("a team quota selects the namespace that the request does not count")

// teamsCounted checks that teams holds every team quota that selects ns now.
func (d *Decider) teamsCounted(ns string, teams []Team) error {
	for _, q := range d.snap.TeamsOf(ns) {
		if !slices.ContainsFunc(teams, func(t Team) bool { return t.Quota.Name == q.Name }) {
			return fmt.Errorf("namespace %q: GPUClusterQuota %q: %w", ns, q.Name, ErrTeamsChanged)
		}
	}
	return nil
}

// chargedUser is who the request's pod or claim is charged to.
func chargedUser(req *Request) string { return cmp.Or(req.ChargedUser, req.User.Username) }

// teamChecks reads the usage of every team of req and lists its limits:
// team by team (sorted by quota name), its spec.hard before its
// spec.perUser, family by family in the configuration's order, dimension
// by dimension.
func (d *Decider) teamChecks(req *Request) []teamCheck {
	if len(req.Teams) == 0 {
		return nil
	}
	teams := slices.Clone(req.Teams)
	slices.SortStableFunc(teams, func(a, b Team) int { return cmp.Compare(a.Quota.Name, b.Quota.Name) })
	user := chargedUser(req)
	var out []teamCheck
	for _, t := range teams {
		s := d.snap.Team(t.Quota, t.Members, t.Reservations, user)
		out = d.appendTeamChecks(out, t.Quota.Limits, false, s, s.Used, s.Reserved, s.Unconfirmed)
		out = d.appendTeamChecks(out, t.Quota.PerUser, true, s, s.UserUsed, s.UserReserved, s.UserUnconfirmed)
	}
	return out
}

// appendTeamChecks appends the checks of one set of limits of team s.
func (d *Decider) appendTeamChecks(out []teamCheck, limits map[string]ledger.Limits, perUser bool, s ledger.TeamSnapshot,
	used, reserved, unconfirmed effective.Usage,
) []teamCheck {
	for i := range d.families {
		f := d.families[i].Name
		lim, ok := limits[f]
		if !ok {
			continue
		}
		for _, dim := range effective.Dimensions() {
			l := lim.Of(dim)
			if l == nil {
				continue
			}
			out = append(out, teamCheck{quota: s.Quota, family: f, dim: dim, limit: *l, perUser: perUser, user: s.User,
				members: s.Members, used: used.Of(f).Get(dim), reserved: reserved.Of(f).Get(dim),
				unconfirmed: unconfirmed.Of(f).Get(dim)})
		}
	}
	return out
}

// after is the dimension's usage after a pod of demand eff.
func (c *teamCheck) after(eff effective.Usage) int64 {
	return effective.SatAdd(effective.SatAdd(c.used, c.reserved), eff.Of(c.family).Get(c.dim))
}

// teamsTerm is input.teamLimits.
func (d *inputDoc) teamsTerm(b *builder) *ast.Term {
	if len(d.teams) == 0 {
		return b.array()
	}
	eff := d.effUsage()
	items := make([]*ast.Term, 0, len(d.teams))
	for i := range d.teams {
		c := &d.teams[i]
		members := make([]*ast.Term, len(c.members))
		for j, m := range c.members {
			members[j] = b.str(m)
		}
		a := c.after(eff)
		items = append(items, b.object(b.item("quota", b.str(c.quota)), b.item("family", b.str(c.family)),
			b.item("dimension", b.str(dimKey(c.dim))), b.item("key", b.str(c.limit.Key)), b.item("value", b.num(c.limit.Value)),
			b.item("invalid", ast.InternedTerm(c.limit.Invalid)), b.item("perUser", ast.InternedTerm(c.perUser)),
			b.item("user", b.str(c.user)), b.item("members", b.array(members...)),
			b.item("used", b.num(c.used)), b.item("reserved", b.num(c.reserved)),
			b.item("after", b.num(a)), b.item("afterPercent", b.num(effective.Percent(a, c.limit.Value)))))
	}
	return b.array(items...)
}

// teamsUnconfirmed reports whether any team check counts unconfirmed
// reservations.
func teamsUnconfirmed(checks []teamCheck) bool {
	return slices.ContainsFunc(checks, func(c teamCheck) bool { return c.unconfirmed > 0 })
}

// withoutUnconfirmed is checks with the unconfirmed reservations taken
// out.
func withoutUnconfirmed(checks []teamCheck) []teamCheck {
	out := slices.Clone(checks)
	for i := range out {
		out[i].reserved = max(out[i].reserved-out[i].unconfirmed, 0)
		out[i].unconfirmed = 0
	}
	return out
}

// teamLimitChecks are the LimitChecks of the team quotas (explain.go).
func (d *Decider) teamLimitChecks(doc *inputDoc) []LimitCheck {
	eff := doc.demand.Effective()
	var out []LimitCheck
	for i := range doc.teams {
		c := &doc.teams[i]
		pod := eff.Of(c.family).Get(c.dim)
		after := c.after(eff)
		lc := LimitCheck{Family: c.family, Resource: d.resourceName(c.family, c.dim), Used: c.used, Reserved: c.reserved,
			Pod: pod, After: after, Limit: c.limit.Value, Quota: c.quota, Key: c.limit.Key, Exceeded: pod > 0 && after > c.limit.Value,
			Kind: KindClusterQuota, Members: c.members}
		if c.perUser {
			lc.User = c.user
		}
		out = append(out, lc)
	}
	return out
}

// resourceName is family's resource name of dimension dim.
func (d *Decider) resourceName(family string, dim effective.Dimension) string {
	for i := range d.families {
		if f := &d.families[i]; f.Name == family {
			return string(f.Names.Of(dim))
		}
	}
	return ""
}
