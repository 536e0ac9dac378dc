package workloadcheck

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// Fitter computes a pod template's demand and the limits over it
// (*decision.Decider).
type Fitter interface {
	TemplateFit(ctx context.Context, ns string, pod *corev1.Pod, pending []reservation.Reservation) (decision.TemplateFit, error)
}

// Workload is one workload object's pod sets.
type Workload struct {
	// Kind, Namespace and Name name it in messages.
	Kind, Namespace, Name string
	Sets                  []workload.PodSet
}

// Request is a workload to check.
type Request struct {
	New *Workload
	// Old is the object before an UPDATE or a scale (nil for a CREATE).
	Old *Workload
	// Own is what the workload's existing pods are charged now: counted
	// as already used when the headroom is compared.
	Own effective.Usage
	// Surge is the pods a rollout creates beside the old ones (a
	// Deployment UPDATE that changes its template); 0: no rollout.
	Surge int64
	// Pending are the namespace's reservations to count beside the
	// ledger's usage.
	Pending []reservation.Reservation
}

// Verdict is the answer for a workload.
type Verdict struct {
	Allowed  bool
	Denials  []string
	Warnings []string
	// Shrinks: the change only shrinks the workload (fewer pods, no
	// higher demand), allowed whatever the limits.
	Shrinks bool
	// Exceeded: a hard limit is passed (denied, or warned under Warn).
	Exceeded bool
}

// Checker checks workloads.
type Checker struct {
	Fit Fitter
	// Warn: a workload past a hard limit is admitted with a warning
	// instead of denied (workloads.enforcement: Warn).
	Warn bool
}

// fitted is a pod set with its fit.
type fitted struct {
	set workload.PodSet
	fit decision.TemplateFit
}

// Check decides req. An error means no verdict could be made.
func (c *Checker) Check(ctx context.Context, req Request) (Verdict, error) {
	w := req.New
	sets, invalid, err := c.fits(ctx, w, req.Pending)
	if err != nil {
		return Verdict{}, err
	}
	if invalid != "" {
		return c.exceeded(Verdict{}, []string{fmt.Sprintf("gpuadmit: %s: %s", ref(w), invalid)}), nil
	}
	v := Verdict{Allowed: true}
	if req.Old != nil {
		old, _, err := c.fits(ctx, req.Old, req.Pending)
		if err != nil {
			return Verdict{}, err
		}
		v.Shrinks = shrinks(sets, old)
	}
	totals, err := sum(sets)
	if err != nil {
		return c.exceeded(v, []string{fmt.Sprintf("gpuadmit: %s: %v", ref(w), err)}), nil
	}
	if !v.Shrinks {
		if over := overLimits(w, totals); len(over) > 0 {
			return c.exceeded(v, over), nil
		}
		v.Warnings = append(v.Warnings, waiting(w, totals, req.Own)...)
	}
	if req.Surge > 0 && len(sets) > 0 {
		v.Warnings = append(v.Warnings, stalls(w, sets[0], req.Surge)...)
	}
	return v, nil
}

// exceeded is the verdict for a workload past a hard limit: denied, or
// allowed with the messages as warnings under Warn.
func (c *Checker) exceeded(v Verdict, msgs []string) Verdict {
	v.Exceeded = true
	if c.Warn {
		v.Allowed = true
		for _, m := range msgs {
			v.Warnings = append(v.Warnings, m+" (admitted: workloads.enforcement is Warn)")
		}
		return v
	}
	v.Allowed, v.Denials = false, msgs
	return v
}

// fits computes each pod set's fit; an invalid template is reported as
// invalid (a message), anything else that fails as an error.
func (c *Checker) fits(ctx context.Context, w *Workload, pending []reservation.Reservation) ([]fitted, string, error) {
	out := make([]fitted, 0, len(w.Sets))
	for _, s := range w.Sets {
		if s.Count == 0 {
			out = append(out, fitted{set: s})
			continue
		}
		f, err := c.Fit.TemplateFit(ctx, w.Namespace, s.Pod, pending)
		var inv *effective.InvalidError
		switch {
		case errors.As(err, &inv):
			return nil, fmt.Sprintf("the pod template %s asks for GPUs in a way no pod is admitted with: %v", s.Name, inv), nil
		case err != nil:
			return nil, "", fmt.Errorf("%s: %s: %w", ref(w), s.Name, err)
		}
		out = append(out, fitted{set: s, fit: f})
	}
	return out, "", nil
}

// shrinks reports whether every pod set of sets is one of old's, with no
// more pods and no higher demand per pod, in every family and dimension,
// and charged under no limit the old set was not charged under with at
// least as much (pods x demand): a template moved under another quota (a
// scoped one its new priority class matches, say) is no shrink.
func shrinks(sets, old []fitted) bool {
	byName := map[string]fitted{}
	for _, o := range old {
		byName[o.set.Name] = o
	}
	for _, s := range sets {
		if s.set.Count == 0 || s.fit.Demand.IsZero() {
			continue
		}
		o, ok := byName[s.set.Name]
		if !ok || s.set.Count > o.set.Count || !notHigher(s.fit.Demand, o.fit.Demand) || !coveredBy(s, o) {
			return false
		}
	}
	return true
}

// coveredBy reports whether every limit s is charged under (its key:
// family, resource, quota, scopes) also applied to o, with o's pods x
// demand under it no less than s's.
func coveredBy(s, o fitted) bool {
	was := map[string]int64{}
	for _, u := range o.fit.Limits {
		if _, seen := was[limitKey(u)]; !seen {
			was[limitKey(u)] = o.fit.Demand.Of(u.Family).Get(u.Dimension)
		}
	}
	for _, u := range s.fit.Limits {
		per := s.fit.Demand.Of(u.Family).Get(u.Dimension)
		if per == 0 {
			continue
		}
		oldPer, ok := was[limitKey(u)]
		if !ok || !productLE(s.set.Count, per, o.set.Count, oldPer) {
			return false
		}
	}
	return true
}

// productLE reports whether a*b <= c*d for non-negative a, b, c, d,
// computed on 128 bits (never wrapped).
func productLE(a, b, c, d int64) bool {
	if a < 0 || b < 0 || c < 0 || d < 0 {
		return false
	}
	hi1, lo1 := bits.Mul64(uint64(a), uint64(b))
	hi2, lo2 := bits.Mul64(uint64(c), uint64(d))
	return hi1 < hi2 || (hi1 == hi2 && lo1 <= lo2)
}

// notHigher reports whether a asks no more than b of every family's
// dimensions.
func notHigher(a, b effective.Usage) bool {
	for f, v := range a {
		for _, d := range effective.Dimensions() {
			if v.Get(d) > b.Of(f).Get(d) {
				return false
			}
		}
	}
	return true
}

func ref(w *Workload) string { return fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name) }
