package decision

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/gpuadmit/gpuadmit/pkg/cache"
)

// nodeView summarizes the GPU nodes a pod may run on: how many there are,
// the largest device memory (it resolves memory percentages), and the
// distinct healthy-device lists ("shapes") the policies match containers
// against. A homogeneous cluster of any size has one shape.
type nodeView struct {
	gpuNodes   int
	eligible   int
	maxMemMiB  int64
	maxDevices int
	largest    *largest
	shapes     []*shape
}

type largest struct {
	node          string
	memMiB, cores int64
}

type shape struct {
	nodes   int
	example string // the first node (by name) with this shape
	devices []device
}

type device struct{ memMiB, cores int64 }

// constrained reports whether the pod limits the nodes it may run on.
func constrained(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	return pod.Spec.NodeName != "" || len(pod.Spec.NodeSelector) > 0 ||
		(a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil)
}

// viewOf summarizes the nodes of c the pod may run on: its node when it is
// bound, else the nodes matching its nodeSelector and required node
// affinity (pod == nil: every node).
func viewOf(c *cache.Capacity, pod *corev1.Pod) *nodeView {
	v := &nodeView{}
	if c == nil {
		return v
	}
	var match func(*cache.NodeCapacity) bool
	if pod != nil && pod.Spec.NodeName != "" {
		match = func(n *cache.NodeCapacity) bool { return n.Name == pod.Spec.NodeName }
	} else if pod != nil && constrained(pod) {
		aff := nodeaffinity.GetRequiredNodeAffinity(pod)
		match = func(n *cache.NodeCapacity) bool {
			ok, err := aff.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}})
			return ok && err == nil
		}
	}
	byKey := map[string]*shape{}
	var key strings.Builder
	for _, n := range c.Nodes {
		v.gpuNodes++
		if match != nil && !match(n) {
			continue
		}
		v.eligible++
		v.maxMemMiB = max(v.maxMemMiB, n.MaxDeviceMemMiB)
		devs := healthy(n)
		v.maxDevices = max(v.maxDevices, len(devs))
		key.Reset()
		for _, d := range devs {
			key.WriteString(strconv.FormatInt(d.memMiB, 10))
			key.WriteByte('/')
			key.WriteString(strconv.FormatInt(d.cores, 10))
			key.WriteByte(',')
		}
		s := byKey[key.String()]
		if s == nil {
			s = &shape{example: n.Name, devices: devs}
			byKey[key.String()] = s
			v.shapes = append(v.shapes, s)
		}
		s.nodes++
		s.example = min(s.example, n.Name)
		if len(devs) > 0 {
			if l := v.largest; l == nil || devs[0].memMiB > l.memMiB ||
				(devs[0].memMiB == l.memMiB && (devs[0].cores > l.cores || (devs[0].cores == l.cores && n.Name < l.node))) {
				v.largest = &largest{node: n.Name, memMiB: devs[0].memMiB, cores: devs[0].cores}
			}
		}
	}
	slices.SortFunc(v.shapes, func(a, b *shape) int { return cmp.Compare(a.example, b.example) })
	return v
}

// healthy returns a node's healthy devices, largest first.
func healthy(n *cache.NodeCapacity) []device {
	devs := make([]device, 0, len(n.Devices))
	for _, d := range n.Devices {
		if d.Healthy {
			devs = append(devs, device{memMiB: d.MemMiB, cores: d.Cores})
		}
	}
	slices.SortFunc(devs, func(a, b device) int { return cmp.Or(cmp.Compare(b.memMiB, a.memMiB), cmp.Compare(b.cores, a.cores)) })
	return devs
}
