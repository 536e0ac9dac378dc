package decision

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
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

// options are the Compute options per family: the device sizes the
// pod's shares and whole devices resolve against (ledger's
// ResolveSizesFor, with the first family's from view, its eligible nodes,
// which is computed once).
func (d *Decider) options(pod *corev1.Pod, view *nodeView) map[string]effective.Options {
	if len(d.families) == 0 {
		return nil
	}
	sizes := d.snap.Capacity().FamilySizesFor(pod)
	opts := make(map[string]effective.Options, len(sizes)+1)
	for f, size := range sizes {
		opts[f] = effective.Options{DeviceMemoryMiB: size}
	}
	opts[d.families[0].Name] = effective.Options{DeviceMemoryMiB: d.resolveSize(pod, view)}
	return opts
}

// resolveSize is the device size the pod's percentages and whole devices
// resolve against (ledger.Capacity.ResolveSizeFor: its selector and
// affinity, not its nodeName); view is its eligible nodes, which serve when
// it names no node.
func (d *Decider) resolveSize(pod *corev1.Pod, view *nodeView) int64 {
	if pod.Spec.NodeName == "" {
		return view.maxMemMiB
	}
	return d.snap.Capacity().ResolveSizeFor(pod)
}

// nodes returns the view of the nodes the pod may run on and its input
// value; the view of all nodes is cached until the ledger's capacity changes.
func (d *Decider) nodes(pod *corev1.Pod) (*nodeView, ast.Value, error) {
	c := d.snap.Capacity()
	if match := ledger.Eligible(pod); match != nil {
		v := viewOf(c, match)
		val, err := capacityValue(v)
		return v, val, err
	}
	if cv := d.all.Load(); cv != nil && cv.capacity == c {
		return cv.view, cv.value, nil
	}
	v := viewOf(c, nil)
	val, err := capacityValue(v)
	if err != nil {
		return nil, nil, err
	}
	d.all.Store(&cachedView{capacity: c, view: v, value: val})
	return v, val, nil
}

// capacityValue converts a node view to the input's capacity document.
func capacityValue(v *nodeView) (ast.Value, error) {
	shapes := make([]any, 0, len(v.shapes))
	for _, s := range v.shapes {
		devs := make([]any, len(s.devices))
		var small device
		for i, d := range s.devices {
			devs[i] = map[string]any{"gpumem": d.memMiB, "gpucores": d.cores}
			if i == 0 {
				small = d
			}
			small = device{memMiB: min(small.memMiB, d.memMiB), cores: min(small.cores, d.cores)}
		}
		shapes = append(shapes, map[string]any{"nodes": int64(s.nodes), "example": s.example, "devices": devs, "deviceCount": int64(len(devs)),
			"smallest": map[string]any{"gpumem": small.memMiB, "gpucores": small.cores}})
	}
	sources := make([]any, len(v.sources))
	for i, src := range v.sources {
		sources[i] = src
	}
	doc := map[string]any{
		"sources": sources, "gpuNodes": int64(v.gpuNodes), "eligibleNodes": int64(v.eligible), "maxDevicesPerNode": int64(v.maxDevices),
		"maxDeviceMemMiB": v.maxMemMiB, "shapes": shapes,
		"largestDevice": map[string]any{"node": "", "gpumem": int64(0), "gpucores": int64(0)},
	}
	if l := v.largest; l != nil {
		doc["largestDevice"] = map[string]any{"node": l.node, "gpumem": l.memMiB, "gpucores": l.cores}
	}
	val, err := ast.InterfaceToValue(doc)
	if err != nil {
		return nil, fmt.Errorf("building the policy input's capacity: %w", err)
	}
	return val, nil
}
