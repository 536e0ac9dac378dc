package ledger

import (
	"fmt"
	"strings"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// LimitUse is one limit of a namespace and what is charged against it:
// Used + Reserved. A namespace is over a limit when a ResourceQuota was
// lowered (or created) under usage already admitted: admission never
// passes a limit, but nothing evicts what a lowered limit no longer covers
// (as with Kubernetes' own ResourceQuota). Memory is MiB.
type LimitUse struct {
	Family   string `json:"family"`
	Resource string `json:"resource"`
	// Dimension is the resource's (count, memory, cores).
	Dimension effective.Dimension `json:"-"`
	Used      int64               `json:"used"`
	Reserved  int64               `json:"reserved"`
	Limit     int64               `json:"limit"`
	Quota     string              `json:"quota"`
	Key       string              `json:"key"`
	// Unit is "MiB" for memory, "" for counts and cores.
	Unit string `json:"unit,omitempty"`
	// Invalid: the quota's value is unusable; the limit blocks the
	// resource and is reported as a problem of its own, never as over.
	Invalid bool `json:"invalid,omitempty"`
	// Scopes are a scoped quota's (NamespaceSnapshot.Scoped): Used is then
	// what the pods in its scopes use, and it limits only those pods.
	Scopes []string `json:"scopes,omitempty"`
}

// Charged is Used + Reserved (saturating).
func (o LimitUse) Charged() int64 { return effective.SatAdd(o.Used, o.Reserved) }

// Over reports whether the charge passes a valid limit.
func (o LimitUse) Over() bool { return !o.Invalid && o.Charged() > o.Limit }

// String says what is charged against which limit, e.g.
// "nvidia.com/gpumem: 10240 MiB charged (10240 used, 0 reserved), over
// the limit 8192 MiB of ResourceQuota gpu".
func (o LimitUse) String() string {
	u := ""
	if o.Unit != "" {
		u = " " + o.Unit
	}
	rel := "within"
	switch {
	case o.Invalid:
		return fmt.Sprintf("%s: the value of ResourceQuota %s (%s) is unusable, so the resource is blocked", o.Resource, o.Quota, o.Key)
	case o.Over():
		rel = "over"
	}
	scope := ""
	if len(o.Scopes) > 0 {
		scope = " (scopes " + strings.Join(o.Scopes, ", ") + ": its pods only)"
	}
	return fmt.Sprintf("%s: %d%s charged (%d used, %d reserved), %s the limit %d%s of ResourceQuota %s%s",
		o.Resource, o.Charged(), u, o.Used, o.Reserved, rel, o.Limit, u, o.Quota, scope)
}

// LimitUses lists every limit of n with its charge, family by family in
// the order of fams, then count, memory, cores: the tightest limits of the
// quotas without scopes against the namespace's usage, then each scoped
// quota's (by name) against the usage of its pods. Reservations count
// against every limit (a reservation does not say its pod's scopes).
func LimitUses(n NamespaceSnapshot, fams []effective.Family) []LimitUse {
	var out []LimitUse
	for i := range fams {
		f := &fams[i]
		out = appendLimitUses(out, f, n.Limits[f.Name], n.Used.Of(f.Name), n.Reserved.Of(f.Name), nil)
		for j := range n.Scoped {
			q := &n.Scoped[j]
			out = appendLimitUses(out, f, q.Limits[f.Name], q.Used.Of(f.Name), n.Reserved.Of(f.Name), q.Scopes)
		}
	}
	return out
}

// appendLimitUses appends the limits lim of family f against used and
// reserved.
func appendLimitUses(out []LimitUse, f *effective.Family, lim Limits, used, reserved effective.Vector, scopes []string) []LimitUse {
	for _, d := range effective.Dimensions() {
		l, name := lim.Of(d), f.Names.Of(d)
		if l == nil || name == "" {
			continue
		}
		unit := ""
		if d == effective.DimensionMemory {
			unit = "MiB"
		}
		out = append(out, LimitUse{Family: f.Name, Resource: string(name), Dimension: d, Used: used.Get(d), Reserved: reserved.Get(d),
			Limit: l.Value, Quota: l.Quota, Key: l.Key, Unit: unit, Invalid: l.Invalid, Scopes: scopes})
	}
	return out
}

// OverLimits lists the limits of n that its usage and reservations pass
// (LimitUses that are Over).
func OverLimits(n NamespaceSnapshot, fams []effective.Family) []LimitUse {
	var out []LimitUse
	for _, u := range LimitUses(n, fams) {
		if u.Over() {
			out = append(out, u)
		}
	}
	return out
}
