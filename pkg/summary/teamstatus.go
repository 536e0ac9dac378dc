package summary

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// Condition types and reasons of a GPUClusterQuota's status.
const (
	ConditionTeamValid = "Valid"
	ReasonInvalidLimit = "InvalidLimit"
)

// maxUsersCell bounds the printer cell of users in bytes.
const maxUsersCell = 1024

// teamStatus computes a GPUClusterQuota's status from v; conditions keep
// their lastTransitionTime while their status stays.
func teamStatus(v Team, fams []effective.Family, conds []metav1.Condition, now time.Time) gpuadmitv1.GPUClusterQuotaStatus {
	lim := v.Quota.Limits
	st := gpuadmitv1.GPUClusterQuotaStatus{
		Hard:     hardList(fams, lim),
		Used:     usageList(fams, v.Usage.Used, lim),
		Reserved: usageList(fams, v.Usage.Reserved, lim),
	}
	for _, n := range v.Namespaces {
		st.Namespaces = append(st.Namespaces, gpuadmitv1.TeamNamespaceUsage{Namespace: n.Name,
			Used: usageList(fams, n.Used, lim), Reserved: usageList(fams, n.Reserved, lim), Departing: n.Departing})
	}
	st.NamespaceCount = int32(min(len(st.Namespaces), 1<<30))
	for _, u := range largestFirst(v.Users, fams) {
		if len(st.UserUsage) == 100 {
			break
		}
		st.UserUsage = append(st.UserUsage, gpuadmitv1.TeamUserUsage{User: u.Name,
			Used: usageList(fams, u.Used, v.Quota.PerUser), Reserved: usageList(fams, u.Reserved, v.Quota.PerUser)})
	}
	st.Users = usersCell(v.Users, fams)
	st.Summary = teamSummary(fams, v.Usage.Used, v.Usage.Reserved, lim)
	st.Conditions = append([]metav1.Condition(nil), conds...)
	set := func(typ, reasonBad, lead string, bad []string, okMsg string) {
		c := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "AsExpected", Message: okMsg, LastTransitionTime: metav1.NewTime(now)}
		if len(bad) > 0 {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reasonBad, lead+listed(bad)
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	var invalid []string
	for _, p := range v.Quota.Problems {
		invalid = append(invalid, p.String())
	}
	set(ConditionTeamValid, ReasonInvalidLimit, "limits not enforced as written: ", invalid,
		"every limit is enforced as written")
	set(gpuadmitv1.ConditionWithinLimits, "OverLimit",
		"usage passes a limit lowered or created under it (admission refuses more until it is back within; nothing is evicted): ",
		overStrings(v.OverLimits(fams)), "usage is within every limit")
	return st
}

// teamSummary is the printer cells: the first family's used/hard per
// dimension, the other families' count and memory.
func teamSummary(fams []effective.Family, used, reserved effective.Usage, lim map[string]ledger.Limits) gpuadmitv1.Summary {
	var sum gpuadmitv1.Summary
	var others []string
	for i := range fams {
		f := &fams[i]
		u, r, l := used.Of(f.Name), reserved.Of(f.Name), lim[f.Name]
		if i > 0 && u.IsZero() && r.IsZero() && l == (ledger.Limits{}) {
			continue
		}
		var scratch gpuadmitv1.GPUUsageStatus
		cells := familyResources(&scratch, f, u, r, l)
		if i == 0 {
			sum.GPU, sum.GPUMem, sum.GPUCores = cells[0], cells[1], cells[2]
			continue
		}
		others = append(others, fmt.Sprintf("%s %s, %s MiB", f.Name, cells[0], cells[1]))
	}
	sum.Families = strings.Join(others, "; ")
	return sum
}

// key is the quota key of a family's resource in dimension d ("":
// the family has no such resource).
func key(f *effective.Family, d effective.Dimension) corev1.ResourceName {
	name := string(f.Names.Of(d))
	if name == "" {
		return ""
	}
	return corev1.ResourceName("limits." + name)
}

// hardList is the limits as enforced, keyed like spec.hard (memory in MiB).
func hardList(fams []effective.Family, lim map[string]ledger.Limits) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range fams {
		for _, d := range effective.Dimensions() {
			if k, l := key(&fams[i], d), lim[fams[i].Name].Of(d); k != "" && l != nil {
				out[k] = *resource.NewQuantity(l.Value, resource.DecimalSI)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// usageList is u keyed like spec.hard: every limited key, and every key
// with a non-zero value.
func usageList(fams []effective.Family, u effective.Usage, lim map[string]ledger.Limits) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := range fams {
		v := u.Of(fams[i].Name)
		for _, d := range effective.Dimensions() {
			k := key(&fams[i], d)
			if k != "" && (v.Get(d) != 0 || lim[fams[i].Name].Of(d) != nil) {
				out[k] = *resource.NewQuantity(v.Get(d), resource.DecimalSI)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// TeamOver is a limit of a team (User "") or of one of its users that
// what is charged (used and reserved) passes.
type TeamOver struct {
	User     string `json:"user,omitempty"`
	Family   string `json:"family"`
	Key      string `json:"key"`
	Used     int64  `json:"used"`
	Reserved int64  `json:"reserved"`
	Limit    int64  `json:"limit"`
}

// String names the limit, what is charged and the limit.
func (o TeamOver) String() string {
	who := ""
	if o.User != "" {
		who = fmt.Sprintf("user %q ", o.User)
	}
	return fmt.Sprintf("%s%s: %d charged (%d used, %d reserved), over the limit %d", who, o.Key, o.Used+o.Reserved, o.Used, o.Reserved, o.Limit)
}

// OverLimits lists the team's limits and each user's per-user limits
// that what is charged (used and reserved) passes.
func (v Team) OverLimits(fams []effective.Family) []TeamOver {
	var over []TeamOver
	check := func(who string, lim map[string]ledger.Limits, used, reserved effective.Usage) {
		for i := range fams {
			f := &fams[i]
			for _, d := range effective.Dimensions() {
				l, k := lim[f.Name].Of(d), key(f, d)
				u, r := used.Of(f.Name).Get(d), reserved.Of(f.Name).Get(d)
				if l != nil && k != "" && u+r > l.Value {
					over = append(over, TeamOver{User: who, Family: f.Name, Key: string(k), Used: u, Reserved: r, Limit: l.Value})
				}
			}
		}
	}
	check("", v.Quota.Limits, v.Usage.Used, v.Usage.Reserved)
	for _, u := range v.Users {
		check(u.Name, v.Quota.PerUser, u.Used, u.Reserved)
	}
	return over
}

// overStrings says each of over.
func overStrings(over []TeamOver) []string {
	out := make([]string, 0, len(over))
	for _, o := range over {
		out = append(out, o.String())
	}
	return out
}

// joinCells joins the cells of the users' printer column.
func joinCells(cells []string) string { return strings.Join(cells, ",") }

// boundedUsers cuts the users' cell to maxUsersCell bytes (user names are
// written by whoever creates workloads).
func boundedUsers(s string) string {
	if len(s) <= maxUsersCell {
		return s
	}
	n := maxUsersCell - 3
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
