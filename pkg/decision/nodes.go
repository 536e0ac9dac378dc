package decision

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// nodeView summarizes the GPU nodes a pod may run on: how many there are,
// the largest device memory (it resolves memory percentages), and the
// distinct healthy-device lists ("shapes") the policies match containers
// against. A homogeneous cluster of any size has one shape.
type nodeView struct {
	// sources are the annotations the GPU nodes (all of them, eligible or
	// not) announce their devices in, sorted: where the cluster's device
	// sizes come from (HAMi's registration, gpuadmit's node agent).
	sources    []string
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

// sourcesOf returns the annotations c's nodes announce their devices in,
// distinct and sorted.
func sourcesOf(c *ledger.Capacity) []string {
	out := []string{}
	for _, n := range c.Nodes {
		if n.Source != "" && !slices.Contains(out, n.Source) {
			out = append(out, n.Source)
		}
	}
	slices.Sort(out)
	return out
}

// viewOf summarizes the nodes of c that match accepts (nil: every node):
// the pod's node when it is bound, else the nodes its nodeSelector and
// required node affinity admit (ledger.Eligible).
func viewOf(c *ledger.Capacity, match func(*ledger.NodeCapacity) bool) *nodeView {
	v := &nodeView{sources: []string{}}
	if c == nil {
		return v
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
	v.sources = sourcesOf(c)
	return v
}

// healthy returns a node's healthy devices, largest first.
func healthy(n *ledger.NodeCapacity) []device {
	devs := make([]device, 0, len(n.Devices))
	for _, d := range n.Devices {
		if d.Healthy {
			devs = append(devs, device{memMiB: d.MemMiB, cores: d.Cores})
		}
	}
	slices.SortFunc(devs, func(a, b device) int { return cmp.Or(cmp.Compare(b.memMiB, a.memMiB), cmp.Compare(b.cores, a.cores)) })
	return devs
}
