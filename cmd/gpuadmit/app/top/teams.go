package top

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/usage"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// topTeam is one team quota (GPUClusterQuota): the namespaces it counts
// (those departed within the grace too), the first family's usage against
// its limits at the first level, every other family's under families,
// each user's (against the per-user limits), and the limits passed.
type topTeam struct {
	Name       string   `json:"-"`
	Namespaces []string `json:"namespaces"`
	Departing  []string `json:"departing,omitempty"`
	topUsage
	Families map[string]topUsage `json:"families,omitempty"`
	Users    map[string]topUsage `json:"users,omitempty"`
	Over     []summary.TeamOver  `json:"over,omitempty"`
	Problems []string            `json:"problems,omitempty"`
}

// topTeams are the teams shown, by name, and the names of those over a
// limit (theirs or a user's).
func topTeams(teams []summary.Team, fams []effective.Family) (map[string]topTeam, []topTeam, []string) {
	if len(teams) == 0 {
		return nil, nil, nil
	}
	primary := fams[0].Name
	byName := make(map[string]topTeam, len(teams))
	list := make([]topTeam, 0, len(teams))
	over := []string{}
	for _, t := range teams {
		tt := topTeam{Name: t.Quota.Name, Namespaces: []string{},
			topUsage: usageOf(t.Usage.Used, t.Usage.Reserved, t.Quota.Limits[primary], primary)}
		for _, n := range t.Namespaces {
			tt.Namespaces = append(tt.Namespaces, n.Name)
			if n.Departing {
				tt.Departing = append(tt.Departing, n.Name)
			}
		}
		for _, f := range fams[1:] {
			if u := usageOf(t.Usage.Used, t.Usage.Reserved, t.Quota.Limits[f.Name], f.Name); !u.Used.IsZero() || !u.Reserved.IsZero() || u.Limits != (usage.Limits{}) {
				tt.Families = withKey(tt.Families, f.Name, u)
			}
		}
		for _, u := range t.Users {
			tt.Users = withKey(tt.Users, u.Name, usageOf(u.Used, u.Reserved, t.Quota.PerUser[primary], primary))
		}
		tt.Over = t.OverLimits(fams)
		for _, p := range t.Quota.Problems {
			tt.Problems = append(tt.Problems, p.String())
		}
		if len(tt.Over) > 0 {
			over = append(over, tt.Name)
		}
		byName[tt.Name] = tt
		list = append(list, tt)
	}
	return byName, list, over
}

// usageOf is family f's usage of used and reserved against lim.
func usageOf(used, reserved effective.Usage, lim ledger.Limits, f string) topUsage {
	u := topUsage{Used: used.Of(f), Reserved: reserved.Of(f), Limits: usage.LimitsOf(lim)}
	ch := u.charged()
	u.Percent = usage.Limits{GPU: percent(ch.GPU, u.Limits.GPU), MemMiB: percent(ch.MemMiB, u.Limits.MemMiB), Cores: percent(ch.Cores, u.Limits.Cores)}
	return u
}

// printTeams writes a row per team (its first family), then a row per
// user of each team.
func printTeams(w io.Writer, teams []topTeam) error {
	if len(teams) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := output.NewTable(w)
	fmt.Fprintln(tw, "TEAM\tNAMESPACES\tGPU\tGPU%\tGPUMEM(MiB)\tGPUMEM%\tGPUCORES\tGPUCORES%\tOVER")
	users := false
	for _, t := range teams {
		names := make([]string, 0, len(t.Namespaces))
		for _, n := range t.Namespaces {
			if slices.Contains(t.Departing, n) {
				n += "(departing)"
			}
			names = append(names, n)
		}
		fmt.Fprintln(tw, strings.Join(append([]string{t.Name, output.OrDash(strings.Join(names, ","))},
			append(usageCells(t.topUsage), teamOverCell(t.Over, false))...), "\t"))
		users = users || len(t.Users) > 0
	}
	if err := tw.Flush(); err != nil || !users {
		return err
	}
	fmt.Fprintln(w)
	tw = output.NewTable(w)
	fmt.Fprintln(tw, "TEAM\tUSER\tGPU\tGPU%\tGPUMEM(MiB)\tGPUMEM%\tGPUCORES\tGPUCORES%\tOVER")
	for _, t := range teams {
		for _, name := range sortedKeys(t.Users) {
			over := slices.DeleteFunc(slices.Clone(t.Over), func(o summary.TeamOver) bool { return o.User != name })
			fmt.Fprintln(tw, strings.Join(append([]string{t.Name, name}, append(usageCells(t.Users[name]), teamOverCell(over, true))...), "\t"))
		}
	}
	return tw.Flush()
}

// usageCells are the charged and percent cells of u.
func usageCells(u topUsage) []string {
	return []string{chargedCell(u.Used.GPU, u.Reserved.GPU, u.Limits.GPU), percentCell(u.Percent.GPU),
		chargedCell(u.Used.MemMiB, u.Reserved.MemMiB, u.Limits.MemMiB), percentCell(u.Percent.MemMiB),
		chargedCell(u.Used.Cores, u.Reserved.Cores, u.Limits.Cores), percentCell(u.Percent.Cores)}
}

// teamOverCell names the keys passed: the team's (users false) or a
// user's.
func teamOverCell(over []summary.TeamOver, users bool) string {
	var keys []string
	for _, o := range over {
		if (o.User != "") == users {
			keys = append(keys, strings.TrimPrefix(o.Key, "limits."))
		}
	}
	return output.OrDash(strings.Join(keys, ","))
}

// sortedKeys are m's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
