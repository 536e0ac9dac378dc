package ledger

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// podRecord is what the ledger stores for one GPU pod: exactly what it
// charged to the pod's namespace and to the devices of its node.
type podRecord struct {
	uid       types.UID
	namespace string
	name      string
	// bound is spec.nodeName; node is the node whose devices are charged
	// ("" while no devices are assigned).
	bound, node string
	state       effective.State
	used        effective.Usage
	devices     []deviceUse // sorted by UUID
	// unresolved names the counted containers whose memory is a percentage
	// of a device of unknown size; their memory is not in used.
	unresolved []string
	// pod is kept only when the demand depends on device sizes (memory
	// percentages, whole devices), to re-derive it when capacity changes.
	pod *corev1.Pod
	// warning is a non-fatal problem (an unreadable device assignment, a
	// charge held above what changed inputs say).
	warning *Problem
	// assignment is the first hami.io/vgpu-devices-allocated seen once the
	// pod was bound: the one charged to devices, whatever edits follow;
	// edited tells that the pod's annotation differs from it now.
	assignment string
	edited     bool
	// floors are, per family, the device size the pod's admission resolved
	// (size-dependent pods): a pending pod is charged against them, a bound
	// pod only for the families its node announces no device of
	// (deriveLocked). Shared, never modified: a change stores a new map.
	floors map[string]int64
	// nodeSizes are, per family, the largest device size the pod's own node
	// announced since the pod was bound: a bound pod is charged against
	// them, and falling below them is reported. Shared like floors.
	nodeSizes map[string]int64
	// scope is what ResourceQuota scopes read of the pod (scope.go).
	scope podScope
	// user is who the pod is charged to (Options.Users), as first recorded.
	user string
}

// derivation is the outcome of reading a pod: a record to store, a problem
// that makes the pod invalid (store nothing), or neither (not a GPU pod, or
// nothing runs any more).
type derivation struct {
	rec     *podRecord
	invalid *Problem
}

// derive computes the target of pod from the object alone, resolving
// memory percentages with opt. It is pure: no ledger state is read. A
// record whose demand depends on device sizes keeps the pod (rec.pod) so
// that deriveLocked can resolve it, now and when capacity changes.
func (l *Ledger) derive(pod *corev1.Pod, opts map[string]effective.Options) derivation {
	if !l.requests(pod) {
		return derivation{}
	}
	d, err := effective.ComputeAll(pod, l.families, opts)
	if err != nil {
		return derivation{invalid: podProblem(pod, err)}
	}
	assign, warning := l.boundAssignment(pod)
	if warning == nil {
		assign, warning = withGpushare(pod, d, assign)
	}
	t, assignErr, err := targetOf(pod, d, assign)
	if assignErr != nil {
		warning = podProblem(pod, fmt.Errorf("device usage not recorded: %w", assignErr))
	}
	if err != nil {
		return derivation{invalid: podProblem(pod, err)}
	}
	if t.Stage.State == effective.StateZero {
		return derivation{}
	}
	rec := newPodRecord(pod, d, t, warning)
	if rec.pod == nil && rec.used.IsZero() && len(rec.devices) == 0 && rec.warning == nil {
		return derivation{}
	}
	return derivation{rec: rec}
}

// boundAssignment returns the device assignment of pod once it is bound
// (device usage counts from then on): nil before binding, or nil and a
// warning when the assignment cannot be read.
func (l *Ledger) boundAssignment(pod *corev1.Pod) (effective.Assignment, *Problem) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	assign, err := devices.PodAssignment(pod)
	if err != nil {
		return nil, podProblem(pod, fmt.Errorf("device usage not recorded: %w", err))
	}
	for i := 1; i < len(l.families); i++ {
		key := l.families[i].AllocAnno
		if key == "" || key == devices.PodAllocatedAnnotation || l.families[i].Rule == effective.RuleGpushare {
			continue // gpushare names a device index (withGpushare)
		}
		more, err := devices.PodAssignmentOf(pod, key)
		if err != nil {
			return nil, podProblem(pod, fmt.Errorf("device usage not recorded: %s: %w", key, err))
		}
		for c, uses := range more {
			if assign == nil {
				assign = effective.Assignment{}
			}
			assign[c] = append(slices.Clone(assign[c]), uses...)
		}
	}
	return assign, nil
}

// targetOf returns the target of pod with its device assignment; when the
// assignment does not fit the pod, it returns the target without device
// usage and, as assignErr, why the assignment was dropped.
func targetOf(pod *corev1.Pod, d effective.Demands, assign effective.Assignment) (t effective.Target, assignErr, err error) {
	t, err = effective.TargetOf(pod, d, assign)
	if err != nil && assign != nil {
		assignErr = err
		t, err = effective.TargetOf(pod, d, nil)
	}
	return t, assignErr, err
}

// newPodRecord is the record of pod charged for target t of demand d, with
// the devices it uses, the pod kept when the demand depends on device sizes,
// and the counted containers whose memory is unresolved.
func newPodRecord(pod *corev1.Pod, ds effective.Demands, t effective.Target, warning *Problem) *podRecord {
	rec := &podRecord{
		namespace: pod.Namespace,
		name:      pod.Name,
		bound:     pod.Spec.NodeName,
		state:     t.Stage.State,
		used:      t.Namespace,
		warning:   warning,
		scope:     scopeOf(pod),
	}
	if len(t.Devices) > 0 {
		rec.node, rec.devices = pod.Spec.NodeName, deviceUses(t.Devices)
	}
	inits := len(pod.Spec.InitContainers)
	for _, d := range ds {
		for i := range d.Containers {
			c := &d.Containers[i]
			if c.MemPercent > 0 && c.Count > 0 {
				rec.pod = pod
			}
			counted := i >= inits || c.Role != effective.RoleInit || i >= t.Stage.From
			if c.Unresolved && counted && !slices.Contains(rec.unresolved, c.Name) {
				rec.unresolved = append(rec.unresolved, c.Name)
			}
		}
	}
	return rec
}

// deriveLocked is derive for a pod whose demand depends on device sizes
// (memory percentages, whole devices). Binding is a step of the pod's
// lifecycle, and the rule reads only the pod and the nodes, so that a
// replica that first sees the pod bound (a restart, a rolling upgrade)
// charges what a replica that saw its admission charges:
//   - pending: what its admission resolved (ResolveSizesFor: the largest
//     plausible device of the nodes it may run on), its floor; once the
//     node watch's initial list is in (NodesListed) no node announcing
//     later raises or lowers it (before, it rises as the list arrives);
//   - bound: its own node's largest plausible device (what HAMi books
//     against is at most that: the device the pod got), raised by its own
//     node's later larger announcements and never lowered by its smaller
//     ones (nodeSizes: the largest since the ledger saw it bound, reported
//     when the node drops below it). The size at admission is not carried
//     past binding: no other node's word sizes a bound pod. A family its
//     node announces no device of resolves by the pending rule (the
//     floor), so that binding to a node that says nothing frees nothing.
//
// An annotation edited after binding never changes the charge (keep).
func (l *Ledger) deriveLocked(pod *corev1.Pod, old *podRecord) derivation {
	c := l.capacityLocked()
	now := c.ResolveSizesFor(pod, l.families)
	var floors, nodeSizes map[string]int64
	if old != nil {
		floors = old.floors
		if old.bound != "" && old.bound == pod.Spec.NodeName {
			nodeSizes = old.nodeSizes
		}
	}
	bound := pod.Spec.NodeName != ""
	var sizes map[string]int64
	if bound {
		nodeSizes = raised(nodeSizes, now, true)
		floors = l.unannouncedFloors(c, pod, floors, nodeSizes)
		sizes = overlaid(floors, nodeSizes)
	} else {
		floors = raised(floors, now, !l.nodesListed)
		sizes = floors
	}
	d := l.derive(pod, optionsOf(sizes))
	if d.rec == nil {
		return d
	}
	d.rec.floors, d.rec.nodeSizes = floors, nodeSizes
	held, where := nodeSizes, "its node "+pod.Spec.NodeName+" now announces" // bound: what its node announced since binding
	if !bound {
		held, where = floors, "the nodes it may run on now announce" // unbound: what its admission resolved
	}
	for _, f := range slices.Sorted(maps.Keys(held)) {
		if now[f] < held[f] {
			what := "devices"
			if f != l.sizedFamily() {
				what = f + " devices"
			}
			d.rec.warn(chargeProblem(pod, fmt.Sprintf("charged for %s of %d MiB, as first resolved; %s at most %d MiB (node capacity dropped, or an annotation was removed)", what, sizes[f], where, now[f])))
		}
	}
	return d
}

// named first.
func (r *podRecord) warn(p *Problem) {
	if r.warning == nil {
		r.warning = p
		return
	}
	if r.warning.Message == p.Message || strings.Contains(r.warning.Message, p.Message) {
		return
	}
	w := *p
	w.Message = p.Message + "; " + r.warning.Message
	r.warning = &w
}

func chargeProblem(pod *corev1.Pod, msg string) *Problem {
	return &Problem{Kind: ProblemCharge, Namespace: pod.Namespace, Name: pod.Name, Message: msg}
}

// deviceUse is what a pod uses on one device (a slice of them is a quarter
// of the memory of a map, and a pod has one or two).
type deviceUse struct {
	uuid string
	used effective.Vector
}

func deviceUses(m map[string]effective.Vector) []deviceUse {
	out := make([]deviceUse, 0, len(m))
	for id, v := range m {
		out = append(out, deviceUse{id, v})
	}
	slices.SortFunc(out, func(a, b deviceUse) int { return strings.Compare(a.uuid, b.uuid) })
	return out
}

func podProblem(pod *corev1.Pod, err error) *Problem {
	return &Problem{Kind: ProblemPod, Namespace: pod.Namespace, Name: pod.Name, Message: err.Error()}
}

// sameRecord reports whether storing b instead of a changes nothing.
func sameRecord(a, b *podRecord) bool {
	return a.namespace == b.namespace && a.name == b.name && a.bound == b.bound && a.node == b.node &&
		a.state == b.state && a.used.Equal(b.used) && a.pod == b.pod &&
		slices.Equal(a.devices, b.devices) && slices.Equal(a.unresolved, b.unresolved) &&
		a.assignment == b.assignment && a.edited == b.edited && sameSizes(a, b) && a.scope == b.scope && a.user == b.user
}

// sameSizes reports whether a and b hold the same sizes (floors, nodeSizes)
// and the same warning.
func sameSizes(a, b *podRecord) bool {
	return maps.Equal(a.floors, b.floors) && maps.Equal(a.nodeSizes, b.nodeSizes) &&
		(a.warning == nil) == (b.warning == nil) && (a.warning == nil || *a.warning == *b.warning)
}

var errOverflow = errors.New("usage sum does not fit in a 64-bit integer")

// chargeLocked adds the record to its namespace and devices; on overflow it
// changes nothing and returns an error.
func (l *Ledger) chargeLocked(r *podRecord) error {
	n := l.ns(r.namespace)
	used, ok := n.used.Add(r.used)
	if !ok {
		l.gcNamespaceLocked(r.namespace)
		return fmt.Errorf("namespace %s: %w", r.namespace, errOverflow)
	}
	var nd *node
	if len(r.devices) > 0 {
		nd = l.nodeLocked(r.node)
		for _, d := range r.devices {
			if _, ok := nd.used[d.uuid].Add(d.used); !ok {
				l.gcNodeLocked(r.node)
				l.gcNamespaceLocked(r.namespace)
				return fmt.Errorf("node %s device %s: %w", r.node, d.uuid, errOverflow)
			}
		}
		for _, d := range r.devices {
			nd.used[d.uuid], _ = nd.used[d.uuid].Add(d.used)
		}
	}
	n.used = used
	n.chargeUser(r.user, r.used)
	chargeScopedLocked(n, r)
	n.pods++
	if len(r.unresolved) > 0 {
		n.unresolved[r.uid] = r
	}
	if r.pod != nil {
		l.sized[r.uid] = r
	}
	return nil
}

// unchargeLocked subtracts exactly what the record charged.
func (l *Ledger) unchargeLocked(r *podRecord) {
	if n := l.namespaces[r.namespace]; n != nil {
		n.used = l.nonNegativeUsage(n.used.Sub(r.used), "namespace "+r.namespace)
		l.unchargeUserLocked(n, r.user, r.used, r.namespace)
		l.unchargeScopedLocked(n, r)
		n.pods--
		delete(n.unresolved, r.uid)
	}
	if nd := l.nodes[r.node]; nd != nil && len(r.devices) > 0 {
		for _, d := range r.devices {
			u := l.nonNegative(nd.used[d.uuid].Sub(d.used), "node "+r.node+" device "+d.uuid)
			if u.IsZero() {
				delete(nd.used, d.uuid)
			} else {
				nd.used[d.uuid] = u
			}
		}
		l.gcNodeLocked(r.node)
	}
	delete(l.sized, r.uid)
}

// nonNegative clamps a sum that would go negative. It never happens while
// the ledger's invariant holds; if it does, the bug is logged, not spread.
func (l *Ledger) nonNegative(v effective.Vector, where string) effective.Vector {
	if v.GPU >= 0 && v.MemMiB >= 0 && v.Cores >= 0 {
		return v
	}
	l.log.Error(errors.New("ledger invariant broken: usage would go negative"), "clamped to zero", "where", where, "usage", v.String())
	return v.Max(effective.Vector{})
}

// nonNegativeUsage is nonNegative for every family of u.
func (l *Ledger) nonNegativeUsage(u effective.Usage, where string) effective.Usage {
	var out effective.Usage
	for f, v := range u {
		if v = l.nonNegative(v, where+" "+f); !v.IsZero() {
			if out == nil {
				out = effective.Usage{}
			}
			out[f] = v
		}
	}
	return out
}
