package workloadcheck

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// total is one limit and what the workload's pods ask of it.
type total struct {
	limit ledger.LimitUse
	// need is the pods' demand summed over the sets the limit applies to.
	need int64
	// terms are "pods x demand" of each set, for messages; perPod the
	// largest single pod's demand.
	terms  []string
	perPod int64
	pods   int64
}

// limitKey names a limit: the quota's key of a family's dimension (a
// scoped quota's apart from the namespace's tightest).
func limitKey(u ledger.LimitUse) string {
	return u.Family + "\x00" + u.Resource + "\x00" + u.Quota + "\x00" + strings.Join(u.Scopes, ",")
}

// sum adds up, per limit, the pods x demand of every set it applies to;
// a product or sum past 64 bits is an error (never wrapped, never
// saturated into something that fits).
func sum(sets []fitted) ([]*total, error) {
	byKey := map[string]*total{}
	var order []*total
	for _, s := range sets {
		for _, u := range s.fit.Limits {
			per := s.fit.Demand.Of(u.Family).Get(u.Dimension)
			if per == 0 || s.set.Count == 0 {
				continue
			}
			t := byKey[limitKey(u)]
			if t == nil {
				t = &total{limit: u}
				byKey[limitKey(u)] = t
				order = append(order, t)
			}
			if per > math.MaxInt64/s.set.Count || t.need > math.MaxInt64-per*s.set.Count {
				return nil, fmt.Errorf("%s x %s of %s does not fit in 64 bits", pods(s.set.Count), amount(per, u), u.Resource)
			}
			t.need += per * s.set.Count
			t.pods += s.set.Count
			t.perPod = max(t.perPod, per)
			t.terms = append(t.terms, fmt.Sprintf("%s x %s", pods(s.set.Count), amount(per, u)))
		}
	}
	return order, nil
}

// overLimits are the messages of the limits the workload's pods pass as a
// whole: per resource, the tightest (the lowest limit passed).
func overLimits(w *Workload, totals []*total) []string {
	tightest := map[string]*total{}
	var resources []string
	for _, t := range totals {
		if !t.limit.Invalid && t.need <= t.limit.Limit {
			continue
		}
		r := t.limit.Family + "/" + t.limit.Resource
		if cur, ok := tightest[r]; !ok {
			resources = append(resources, r)
			tightest[r] = t
		} else if t.limit.Invalid || (!cur.limit.Invalid && t.limit.Limit < cur.limit.Limit) {
			tightest[r] = t
		}
	}
	sort.Strings(resources)
	out := make([]string, 0, len(resources))
	for _, r := range resources {
		t := tightest[r]
		if t.limit.Invalid {
			out = append(out, fmt.Sprintf("gpuadmit: %s: %s of %s, but the value of ResourceQuota %s (%s) is unusable, so the resource is blocked",
				ref(w), strings.Join(t.terms, " + "), t.limit.Resource, t.limit.Quota, t.limit.Key))
			continue
		}
		out = append(out, fmt.Sprintf("gpuadmit: %s can never run whole: %s = %s of %s, over the limit %s of ResourceQuota %s%s",
			ref(w), strings.Join(t.terms, " + "), amount(t.need, t.limit), t.limit.Resource, amount(t.limit.Limit, t.limit), t.limit.Quota, scopes(t.limit)))
	}
	return out
}

// waiting warns, for the limit that leaves the most pods waiting, how
// many of the workload's pods will wait for room: what they need beyond
// what its own pods already use, against the headroom (limit - used -
// reserved).
func waiting(w *Workload, totals []*total, own effective.Usage) []string {
	var worst *total
	var most, extra, free int64
	for _, t := range totals {
		e := max(t.need-own.Of(t.limit.Family).Get(t.limit.Dimension), 0)
		h := max(t.limit.Limit-t.limit.Charged(), 0)
		if e <= h {
			continue
		}
		n := min((e-h+t.perPod-1)/t.perPod, t.pods)
		if n > most {
			worst, most, extra, free = t, n, e, h
		}
	}
	if worst == nil {
		return nil
	}
	u := worst.limit
	return []string{fmt.Sprintf("gpuadmit: %s: %d of %d pods will wait: they need %s more of %s, and %s is free under ResourceQuota %s%s (limit %s, used %s, reserved %s)",
		ref(w), most, worst.pods, amount(extra, u), u.Resource, amount(free, u), u.Quota, scopes(u), amount(u.Limit, u), amount(u.Used, u), amount(u.Reserved, u))}
}

// stalls warns when a rollout's surge pods (of the first pod set, the
// template a Deployment rolls out) cannot fit the headroom.
func stalls(w *Workload, s fitted, surge int64) []string {
	var out []string
	for _, u := range s.fit.Limits {
		per := s.fit.Demand.Of(u.Family).Get(u.Dimension)
		if per == 0 || u.Invalid {
			continue
		}
		need := satMul(per, surge)
		if free := max(u.Limit-u.Charged(), 0); need > free {
			out = append(out, fmt.Sprintf("gpuadmit: %s: the rollout will stall: its %d surge pod(s) need %s of %s, and %s is free under ResourceQuota %s%s (limit %s, used %s, reserved %s); set maxSurge to 0 (and maxUnavailable to 1 or more), or free room",
				ref(w), surge, amount(need, u), u.Resource, amount(free, u), u.Quota, scopes(u), amount(u.Limit, u), amount(u.Used, u), amount(u.Reserved, u)))
			break
		}
	}
	return out
}

func amount(n int64, u ledger.LimitUse) string {
	if u.Unit == "" {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d %s", n, u.Unit)
}

func scopes(u ledger.LimitUse) string {
	if len(u.Scopes) == 0 {
		return ""
	}
	return " (scopes " + strings.Join(u.Scopes, ", ") + ")"
}

// satMul is a*b for non-negative a and b, saturating at MaxInt64.
func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// pods is "1 pod" or "n pods".
func pods(n int64) string {
	if n == 1 {
		return "1 pod"
	}
	return fmt.Sprintf("%d pods", n)
}
