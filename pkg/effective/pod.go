package effective

import (
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// Demands is a pod's demand in every family it names, in the order of the
// families it was computed for; families the pod does not name are absent.
type Demands []*Demand

// ComputeAll computes pod's demand in each family of fams (Compute per
// family, with that family's options from opts, keyed by family name).
// The invalid requests of every family are reported together in one
// *InvalidError.
func ComputeAll(pod *corev1.Pod, fams []Family, opts map[string]Options) (Demands, error) {
	var out Demands
	var invalid []*FieldError
	for i := range fams {
		if !fams[i].Requests(pod) {
			continue
		}
		d, err := Compute(pod, fams[i], opts[fams[i].Name])
		var inv *InvalidError
		switch {
		case errors.As(err, &inv):
			invalid = append(invalid, inv.Errors...)
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, d)
	}
	if len(invalid) > 0 {
		return nil, &InvalidError{Errors: invalid}
	}
	return out, nil
}

// Of returns the demand of family, nil when the pod names none of it.
func (ds Demands) Of(family string) *Demand {
	for _, d := range ds {
		if d.Family == family {
			return d
		}
	}
	return nil
}

// Effective is the pod's effective demand per family.
func (ds Demands) Effective() Usage {
	var u Usage
	for _, d := range ds {
		if !d.Effective.IsZero() {
			if u == nil {
				u = make(Usage, len(ds))
			}
			u[d.Family] = d.Effective
		}
	}
	return u
}

// From is Demand.From per family: the demand counting only the regular
// init containers at index from or later.
func (ds Demands) From(from int) (Usage, error) {
	var u Usage
	for _, d := range ds {
		v, err := d.From(from)
		if err != nil {
			return nil, err
		}
		if !v.IsZero() {
			if u == nil {
				u = make(Usage, len(ds))
			}
			u[d.Family] = v
		}
	}
	return u, nil
}

// Unresolved names, per family, the containers whose memory is a share of
// a device of unknown size.
func (ds Demands) Unresolved() map[string][]string {
	var out map[string][]string
	for _, d := range ds {
		if len(d.Unresolved) > 0 {
			if out == nil {
				out = map[string][]string{}
			}
			out[d.Family] = d.Unresolved
		}
	}
	return out
}

// RequestsAny reports whether pod names a resource of any family of fams.
func RequestsAny(pod *corev1.Pod, fams []Family) bool {
	for i := range fams {
		if fams[i].Requests(pod) {
			return true
		}
	}
	return false
}

// ManagedBy returns the family of fams that manages name, false when none.
func ManagedBy(fams []Family, name corev1.ResourceName) (*Family, bool) {
	for i := range fams {
		if fams[i].Managed(name) {
			return &fams[i], true
		}
	}
	return nil, false
}

// With returns ds with o's demand added family by family: o's containers
// after ds's, the effective demands summed (o holds devices for the whole
// life of the pod, as a claim does). ds and o are not modified. It reports
// false when a sum overflows.
func (ds Demands) With(o Demands) (Demands, bool) {
	out := make(Demands, 0, len(ds)+len(o))
	for _, d := range ds {
		c := *d
		out = append(out, &c)
	}
	for _, od := range o {
		d := out.Of(od.Family)
		if d == nil {
			c := *od
			out = append(out, &c)
			continue
		}
		sum, ok := d.Effective.Add(od.Effective)
		if !ok {
			return nil, false
		}
		d.Effective = sum
		d.Containers = append(slices.Clip(d.Containers), od.Containers...)
		d.Unresolved = append(slices.Clip(d.Unresolved), od.Unresolved...)
	}
	return out, true
}

// HasTemplateClaim reports whether the pod names a ResourceClaimTemplate.
func HasTemplateClaim(p *corev1.Pod) bool {
	for _, rc := range p.Spec.ResourceClaims {
		if rc.ResourceClaimTemplateName != nil {
			return true
		}
	}
	return false
}

// CrossNamespaceAffinity is the in-tree usesCrossNamespacePodAffinity: a
// pod affinity or anti-affinity term, required or preferred, that names
// namespaces or a namespace selector.
func CrossNamespaceAffinity(a *corev1.Affinity) bool {
	if a == nil {
		return false
	}
	var terms []*corev1.PodAffinityTerm
	if pa := a.PodAffinity; pa != nil {
		terms = appendTerms(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms = appendTerms(terms, pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	for _, t := range terms {
		if len(t.Namespaces) != 0 || t.NamespaceSelector != nil {
			return true
		}
	}
	return false
}

func appendTerms(out []*corev1.PodAffinityTerm, req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) []*corev1.PodAffinityTerm {
	for i := range req {
		out = append(out, &req[i])
	}
	for i := range pref {
		out = append(out, &pref[i].PodAffinityTerm)
	}
	return out
}
