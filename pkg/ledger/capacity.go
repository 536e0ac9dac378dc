package ledger

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// node is the per-node state: what the Node object says (labels, devices)
// and what the pods bound to it use.
type node struct {
	// seen: the Node object is known (pods may reference unknown nodes).
	seen     bool
	labels   map[string]string
	devices  []devices.Device
	source   string // the annotation the devices were read from
	problems []Problem
	// maxMemMiB is the largest device memory: it resolves the memory
	// percentages of the pods bound to the node.
	maxMemMiB int64
	// sizes are the largest device memory of every other family the
	// node's register annotations announce (families.go).
	sizes map[string]int64
	// used is the per-device sum of the records charged to the node.
	used map[string]effective.Vector
}

func (l *Ledger) nodeLocked(name string) *node {
	nd := l.nodes[name]
	if nd == nil {
		nd = &node{used: map[string]effective.Vector{}}
		l.nodes[name] = nd
	}
	return nd
}

func (l *Ledger) gcNodeLocked(name string) {
	if nd := l.nodes[name]; nd != nil && !nd.seen && len(nd.used) == 0 {
		delete(l.nodes, name)
	}
}

// UpsertNode records a node's labels and GPU devices. Devices come from
// gpuadmit.io/gpu-devices when present, else from HAMi's
// hami.io/node-nvidia-register. A malformed annotation is logged and
// reported, and the node then has no known devices.
func (l *Ledger) UpsertNode(n *corev1.Node) {
	devs, source, problems := l.nodeDevices(n)
	sizes, more := l.familySizes(n)
	problems = append(problems, more...)
	l.mu.Lock()
	defer l.mu.Unlock()
	nd := l.nodeLocked(n.Name)
	if !slices.Equal(nd.problems, problems) { // log changes, not every status update of the node
		for _, p := range problems {
			l.log.Info("node GPU devices not readable", "node", n.Name, "problem", p.Message)
		}
	}
	labelsChanged := !nd.seen || !maps.Equal(nd.labels, n.Labels)
	devicesChanged := !slices.Equal(nd.devices, devs) || nd.source != source || !maps.Equal(nd.sizes, sizes)
	if !labelsChanged && !devicesChanged && slices.Equal(nd.problems, problems) {
		return // a status update: nothing gpuadmit reads changed
	}
	nd.seen, nd.labels, nd.devices, nd.source, nd.problems, nd.sizes = true, n.Labels, devs, source, problems, sizes
	nd.maxMemMiB = maxMemory(devs)
	l.capacityChangedLocked()
}

// DeleteNode forgets a node's labels and devices; usage charged to it stays
// until its pods are deleted.
func (l *Ledger) DeleteNode(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	nd := l.nodes[name]
	if nd == nil {
		return
	}
	if nd.seen {
		nd.seen, nd.labels, nd.devices, nd.source, nd.problems, nd.maxMemMiB, nd.sizes = false, nil, nil, "", nil, 0, nil
		l.capacityChangedLocked()
	}
	l.gcNodeLocked(name)
}

// NodesListed tells the ledger that every node of the initial list has
// been recorded (the Feed calls it once the node watch has synced): from
// now on a pending pod keeps the size it was resolved against and no node
// announcing larger devices raises it (deriveLocked).
func (l *Ledger) NodesListed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nodesListed = true
}

// capacityChangedLocked drops the cached capacity and re-derives the pods
// whose demand depends on device sizes (they resolve against the largest
// device of the nodes they may run on, which may have changed; never below
// what they were first charged).
func (l *Ledger) capacityChangedLocked() {
	l.capacity = nil
	for _, r := range slices.Collect(maps.Values(l.sized)) {
		d := l.deriveLocked(r.pod, r)
		d.keep(r, r.pod, false, l.allocs)
		l.applyLocked(r.uid, podName{r.namespace, r.name}, d)
	}
}

func maxMemory(devs []devices.Device) int64 {
	var m int64
	for _, d := range devs {
		m = max(m, d.MemoryMiB)
	}
	return m
}

// nodeDevices reads a node's device annotations: HAMi's registration
// first (the size HAMi books a whole device or a share against, its
// deviceMemoryScaling overcommit included), else the node agent's
// (the physical size, for nodes HAMi does not register). A device above
// the first family's plausibility bound is left out and reported: it
// sizes no one's charge.
func (l *Ledger) nodeDevices(n *corev1.Node) ([]devices.Device, string, []Problem) {
	for _, key := range []string{devices.HAMiNodeRegisterAnnotation, devices.NodeDevicesAnnotation} {
		value, ok := n.Annotations[key]
		if !ok {
			continue
		}
		var devs []devices.Device
		var err error
		if key == devices.NodeDevicesAnnotation {
			devs, err = devices.DecodeNodeDevices(value)
		} else {
			devs, err = devices.DecodeHAMiNodeRegister(value)
		}
		if err != nil {
			return nil, key, []Problem{nodeProblem(n.Name, key, value, "node has no known GPU devices: "+err.Error())}
		}
		devs, err = devices.BoundDevices(key, devs, l.boundOf(l.sizedFamily()))
		if err != nil {
			return devs, key, []Problem{nodeProblem(n.Name, key, value, "node announces an implausible GPU device: "+err.Error())}
		}
		return devs, key, nil
	}
	return nil, "", nil
}

// boundOf is the plausibility bound (MiB) of a device of family.
func (l *Ledger) boundOf(family string) int64 {
	if l.maxMem != nil {
		if b := l.maxMem(family); b > 0 {
			return b
		}
	}
	return devices.DefaultMaxDeviceMemoryMiB
}

// nodeProblem is a problem of node name's annotation key.
func nodeProblem(name, key, value, msg string) Problem {
	return Problem{Kind: ProblemNode, Name: name, Key: key, Value: truncate(value, 200), Message: msg}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// Capacity is the device capacity of the cluster's GPU nodes, by node name.
type Capacity struct {
	Nodes map[string]*NodeCapacity `json:"nodes"`
	// FamilyNodes are the nodes that announce devices of the other
	// families (HAMi's register annotations), by node name.
	FamilyNodes map[string]*FamilyNode `json:"familyNodes,omitempty"`
	// maxMemMiB is the largest device memory of all nodes.
	maxMemMiB int64
}

// NodeCapacity is one node's labels (for node-selector matching) and devices.
type NodeCapacity struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	// Source is the annotation the devices were read from.
	Source  string           `json:"source"`
	Devices []DeviceCapacity `json:"devices"`
	// MaxDeviceMemMiB is the largest device memory (resolves percentages).
	MaxDeviceMemMiB int64     `json:"maxDeviceMemMiB"`
	Problems        []Problem `json:"problems,omitempty"`
}

// FamilyNode is one node's labels and the largest device memory (MiB) of
// each family other than the first its register annotations announce.
type FamilyNode struct {
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	MaxMemMiB map[string]int64  `json:"maxMemMiB"`
}

// DeviceCapacity is one GPU (or MIG instance) of a node.
type DeviceCapacity struct {
	UUID    string `json:"uuid"`
	Index   int    `json:"index"`
	Model   string `json:"model,omitempty"`
	MemMiB  int64  `json:"gpumem"`
	Cores   int64  `json:"gpucores"`
	Healthy bool   `json:"healthy"`
	MIG     bool   `json:"mig,omitempty"`
}

// Capacity returns the device capacity of every node that announces GPU
// devices (or whose announcement is malformed). The value is shared and
// immutable: callers must not modify it. It is rebuilt only after a node
// change, so repeated calls are cheap.
func (l *Ledger) Capacity() *Capacity {
	l.mu.RLock()
	c := l.capacity
	l.mu.RUnlock()
	if c != nil {
		return c
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.capacityLocked()
}

func (l *Ledger) buildCapacityLocked() *Capacity {
	c := &Capacity{Nodes: map[string]*NodeCapacity{}}
	for name, nd := range l.nodes {
		if nd.seen && len(nd.sizes) > 0 {
			if c.FamilyNodes == nil {
				c.FamilyNodes = map[string]*FamilyNode{}
			}
			c.FamilyNodes[name] = &FamilyNode{Name: name, Labels: maps.Clone(nd.labels), MaxMemMiB: maps.Clone(nd.sizes)}
		}
		if !nd.seen || nd.source == "" {
			continue
		}
		nc := &NodeCapacity{Name: name, Labels: maps.Clone(nd.labels), Source: nd.source,
			Devices: make([]DeviceCapacity, 0, len(nd.devices)), MaxDeviceMemMiB: nd.maxMemMiB,
			Problems: slices.Clone(nd.problems)}
		for _, d := range nd.devices {
			nc.Devices = append(nc.Devices, deviceCapacity(d))
		}
		c.Nodes[name] = nc
		c.maxMemMiB = max(c.maxMemMiB, nd.maxMemMiB)
	}
	return c
}

// capacityLocked is Capacity under the ledger's write lock.
func (l *Ledger) capacityLocked() *Capacity {
	if l.capacity == nil {
		l.capacity = l.buildCapacityLocked()
	}
	return l.capacity
}

// deviceCapacity is the one conversion of an announced device.
func deviceCapacity(d devices.Device) DeviceCapacity {
	return DeviceCapacity{UUID: d.UUID, Index: d.Index, Model: d.Model, MemMiB: d.MemoryMiB, Cores: d.Cores,
		Healthy: d.Healthy, MIG: d.MIGEnabled || d.ParentUUID != ""}
}
