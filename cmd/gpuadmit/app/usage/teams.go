package usage

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// usageTeam is one team quota (GPUClusterQuota) counting a namespace
// shown: the namespaces it counts, the first family's use of them
// together against the team's limits, and each user's against the
// per-user limits (what is reserved is `top`'s).
type usageTeam struct {
	Namespaces []string                    `json:"namespaces"`
	Used       effective.Vector            `json:"used"`
	Limits     Limits                      `json:"limits"`
	Users      map[string]effective.Vector `json:"users,omitempty"`
	PerUser    Limits                      `json:"perUser"`
}

// teamsOf renders the teams, by name (nil without any).
func teamsOf(teams []summary.Team, primary string) map[string]usageTeam {
	if len(teams) == 0 {
		return nil
	}
	out := make(map[string]usageTeam, len(teams))
	for _, t := range teams {
		u := usageTeam{Namespaces: []string{}, Used: t.Usage.Used.Of(primary), Limits: LimitsOf(t.Quota.Limits[primary]),
			PerUser: LimitsOf(t.Quota.PerUser[primary])}
		for _, n := range t.Namespaces {
			u.Namespaces = append(u.Namespaces, n.Name)
		}
		for _, p := range t.Users {
			if u.Users == nil {
				u.Users = map[string]effective.Vector{}
			}
			u.Users[p.Name] = p.Used.Of(primary)
		}
		out[t.Quota.Name] = u
	}
	return out
}

// printTeams writes a row per team: its namespaces and its use against
// its limits.
func printTeams(w io.Writer, teams map[string]usageTeam) error {
	if len(teams) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := output.NewTable(w)
	fmt.Fprintln(t, "TEAM\tNAMESPACES\tGPU\tGPUMEM(MiB)\tGPUCORES\tUSERS")
	for _, name := range slices.Sorted(maps.Keys(teams)) {
		u := teams[name]
		users := make([]string, 0, len(u.Users))
		for _, user := range slices.Sorted(maps.Keys(u.Users)) {
			users = append(users, fmt.Sprintf("%s=%d", user, u.Users[user].GPU))
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", name, output.OrDash(strings.Join(u.Namespaces, ",")),
			output.OfLimit(u.Used.GPU, u.Limits.GPU), output.OfLimit(u.Used.MemMiB, u.Limits.MemMiB),
			output.OfLimit(u.Used.Cores, u.Limits.Cores), output.OrDash(strings.Join(users, ",")))
	}
	return t.Flush()
}
