package ledger

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// Eligible returns the nodes pod may run on, as a predicate: its node when
// it is bound (spec.nodeName), else the nodes its nodeSelector and required
// node affinity admit (the scheduler's own matcher); nil when the pod does
// not restrict its nodes. It is gpuadmit's one eligibility rule: whether a
// node can hold a pod's devices at all, and which nodes' devices size its
// memory percentages and whole devices (ResolveSizeFor), so that the
// decision, the mutating webhook and the ledger never disagree.
func Eligible(pod *corev1.Pod) func(*NodeCapacity) bool {
	if name := pod.Spec.NodeName; name != "" {
		return func(n *NodeCapacity) bool { return n.Name == name }
	}
	a := pod.Spec.Affinity
	if len(pod.Spec.NodeSelector) == 0 &&
		(a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return nil
	}
	aff := nodeaffinity.GetRequiredNodeAffinity(pod)
	return func(n *NodeCapacity) bool {
		ok, err := aff.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}})
		return ok && err == nil
	}
}

// ResolveSizeFor is the device size a pod's memory percentages and
// whole-device requests resolve against: the largest device of the nodes
// it may run on (Eligible: its own node once bound, else the nodes its
// nodeSelector and required node affinity admit; 0 when none is known).
// Only plausible devices count (a device above its family's bound is left
// out of the capacity). The decision and the mutating webhook resolve a
// new pod with it; the ledger resolves a pending pod with it once (its
// admission's size, kept) and, once the pod is bound, against its own node
// only, never below the largest its node announced since binding
// (deriveLocked); no other node's announcement raises a bound pod's charge.
func (c *Capacity) ResolveSizeFor(pod *corev1.Pod) int64 {
	return c.MaxDeviceMemMiBFor(pod)
}

// MaxDeviceMemMiBFor is the largest device memory among the nodes pod may
// run on (Eligible); 0 when none is known.
func (c *Capacity) MaxDeviceMemMiBFor(pod *corev1.Pod) int64 {
	match := Eligible(pod)
	if match == nil && (c.maxMemMiB > 0 || len(c.Nodes) == 0) {
		return c.maxMemMiB
	}
	var m int64
	for _, n := range c.Nodes {
		if match == nil || match(n) {
			m = max(m, n.MaxDeviceMemMiB)
		}
	}
	return m
}
