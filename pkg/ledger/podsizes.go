package ledger

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// The device sizes a pod's memory resolves against (deriveLocked): what
// its admission resolved while pending, its own node's once bound, raised
// by that node's later larger announcements and never lowered by them.

// unannouncedFloors returns floors raised, for every family pod requests
// that its own node has announced no device of (nodeSizes), by the
// pending rule: the size its admission resolves (the nodes its selector
// and affinity admit), held once the node list is in. A replica that saw
// the pod pending holds what it resolved then; one that first sees it
// bound resolves it so.
func (l *Ledger) unannouncedFloors(c *Capacity, pod *corev1.Pod, floors, nodeSizes map[string]int64) map[string]int64 {
	missing := false
	for i := range l.families {
		if nodeSizes[l.families[i].Name] <= 0 && l.families[i].Requests(pod) {
			missing = true
			break
		}
	}
	if !missing {
		return floors
	}
	p := *pod
	p.Spec.NodeName = ""
	now := c.ResolveSizesFor(&p, l.families)
	for f := range now {
		if nodeSizes[f] > 0 {
			delete(now, f) // the node speaks for it
		}
	}
	return raised(floors, now, !l.nodesListed)
}

// overlaid returns base with every positive size of over in its place
// (over itself when it covers base). Neither is modified.
func overlaid(base, over map[string]int64) map[string]int64 {
	out, cloned := over, false
	for f, size := range base {
		if over[f] > 0 {
			continue
		}
		if !cloned {
			out, cloned = make(map[string]int64, len(over)+len(base)), true
			maps.Copy(out, over)
		}
		out[f] = size
	}
	return out
}

// raised returns sizes with every family of now that it lacks (all of
// them: the first resolution) and, when raise is set, every family now
// holds larger, at now's size. sizes itself is returned when nothing
// changes; it is shared and never modified.
func raised(sizes, now map[string]int64, raise bool) map[string]int64 {
	out, cloned := sizes, false
	for f, size := range now {
		cur, ok := sizes[f]
		if size <= 0 || (ok && (!raise || size <= cur)) {
			continue
		}
		if !cloned {
			out, cloned = make(map[string]int64, len(sizes)+1), true
			maps.Copy(out, sizes)
		}
		out[f] = size
	}
	return out
}

// warn adds p to the record's warning: one problem per pod, a held charge

// PodSizes are, per family, the Compute options (device sizes) the ledger
// charges pod with now: its memory percentages and whole devices resolve
// against them. nil when the ledger holds no record of the pod or its
// charge depends on no device size.
func (l *Ledger) PodSizes(pod *corev1.Pod) map[string]effective.Options {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r := l.pods[podUID(pod)]
	if r == nil || (r.floors == nil && r.nodeSizes == nil) {
		return nil
	}
	return optionsOf(overlaid(r.floors, r.nodeSizes))
}
