package ledger

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A pod's device assignment (HAMi's per-family assignment annotations,
// gpushare's device index) counts as first written once the pod is bound;
// a record carries it, and the sizes its memory first resolved against,
// across the pod's updates.

// firstAssignment returns pod with the device assignment that counts: the
// first hami.io/vgpu-devices-allocated the ledger saw once the pod was
// bound (HAMi's scheduler writes it before binding; a pod never moves to
// another node, so a later change is an edit, by anyone with edit in the
// namespace). Before binding the annotation may change freely: HAMi
// re-schedules a pod whose binding failed. edited reports that pod's
// annotation differs from the one that counts.
//
// Every family's assignment annotation (and gpushare's device index) is
// treated so: l.allocs.
func (l *Ledger) firstAssignment(old *podRecord, pod *corev1.Pod) (trusted *corev1.Pod, edited bool) {
	if old == nil || old.assignment == "" || pod.Spec.NodeName == "" {
		return pod, false
	}
	if assignmentOf(pod, l.allocs) == old.assignment {
		return pod, false
	}
	p := *pod
	p.Annotations = maps.Clone(pod.Annotations)
	for _, k := range l.allocs {
		delete(p.Annotations, k)
	}
	for k, v := range decodeAssignment(old.assignment) {
		p.Annotations[k] = v
	}
	return &p, true
}

// keep carries what the record must remember from old (the first
// assignment, the floor) and reports an edited assignment.
func (d *derivation) keep(old *podRecord, trusted *corev1.Pod, edited bool, allocs []string) {
	r := d.rec
	if r == nil {
		return
	}
	if trusted.Spec.NodeName != "" {
		r.assignment = assignmentOf(trusted, allocs)
	}
	if old != nil {
		r.floors = higherFloors(r.floors, old.floors)
	}
	r.edited = edited || (old != nil && old.edited && trusted == old.pod)
	if r.edited {
		r.warn(chargeProblem(trusted, fmt.Sprintf("%s was changed after the pod was bound; the first assignment stays charged (only HAMi's scheduler assigns devices, before binding)", strings.Join(presentKeys(r.assignment), ", "))))
	}
}

// higherFloors returns the per-family maximum of a and b (a itself when
// b raises none).
func higherFloors(a, b map[string]int64) map[string]int64 {
	var out map[string]int64
	for f, v := range b {
		if v > a[f] {
			if out == nil {
				out = maps.Clone(a)
				if out == nil {
					out = map[string]int64{}
				}
			}
			out[f] = v
		}
	}
	if out == nil {
		return a
	}
	return out
}

// assignmentOf encodes the values of keys pod has, in keys' order
// ("key\x00value\x00..."; "" when it has none).
func assignmentOf(pod *corev1.Pod, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		if v, ok := pod.Annotations[k]; ok {
			b.WriteString(k)
			b.WriteByte(0)
			b.WriteString(v)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// decodeAssignment is the inverse of assignmentOf.
func decodeAssignment(s string) map[string]string {
	parts := strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
	out := make(map[string]string, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		out[parts[i]] = parts[i+1]
	}
	return out
}

// presentKeys names the annotations an encoded assignment holds.
func presentKeys(s string) []string {
	return slices.Sorted(maps.Keys(decodeAssignment(s)))
}
