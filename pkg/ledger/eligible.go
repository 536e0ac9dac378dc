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
// node can hold a pod's devices at all. Device sizes resolve with
// ResolveSizeFor (the same rule without spec.nodeName), so that the
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
// whole-device requests resolve against, at admission and ever after: the
// largest device of the nodes its nodeSelector and required node affinity
// admit (0 when none is known). Not its spec.nodeName, nor the device HAMi
// assigned: once bound, a pod keeps the size its admission resolved (HAMi
// books the assigned device; gpuadmit books what it admitted, so that no
// node or annotation can lower a charge). The decision, the mutating
// webhook and the ledger all resolve with it.
func (c *Capacity) ResolveSizeFor(pod *corev1.Pod) int64 {
	return c.MaxDeviceMemMiBFor(unbound(pod))
}

// unbound is pod without its node.
func unbound(pod *corev1.Pod) *corev1.Pod {
	if pod.Spec.NodeName == "" {
		return pod
	}
	p := *pod
	p.Spec.NodeName = ""
	return &p
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
