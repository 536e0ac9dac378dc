package cache

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// used is the per-device sum of the records charged to the node.
	used map[string]effective.Vector
	// percent are the bound pods whose demand depends on maxMemMiB.
	percent map[types.UID]*podRecord
}

func (l *Ledger) nodeLocked(name string) *node {
	nd := l.nodes[name]
	if nd == nil {
		nd = &node{used: map[string]effective.Vector{}, percent: map[types.UID]*podRecord{}}
		l.nodes[name] = nd
	}
	return nd
}

func (l *Ledger) gcNodeLocked(name string) {
	if nd := l.nodes[name]; nd != nil && !nd.seen && len(nd.used) == 0 && len(nd.percent) == 0 {
		delete(l.nodes, name)
	}
}

// nodeMemLocked is the largest device memory of a node (0: unknown).
func (l *Ledger) nodeMemLocked(name string) int64 {
	if nd := l.nodes[name]; nd != nil {
		return nd.maxMemMiB
	}
	return 0
}

// UpsertNode records a node's labels and GPU devices. Devices come from
// gpuadmit.io/gpu-devices when present, else from HAMi's
// hami.io/node-nvidia-register. A malformed annotation is logged and
// reported, and the node then has no known devices.
func (l *Ledger) UpsertNode(n *corev1.Node) {
	devs, source, problems := nodeDevices(n)
	l.mu.Lock()
	defer l.mu.Unlock()
	nd := l.nodeLocked(n.Name)
	if !slices.Equal(nd.problems, problems) { // log changes, not every status update of the node
		for _, p := range problems {
			l.log.Info("node GPU devices not readable", "node", n.Name, "problem", p.Message)
		}
	}
	if !nd.seen || !maps.Equal(nd.labels, n.Labels) || !slices.Equal(nd.devices, devs) ||
		nd.source != source || !slices.Equal(nd.problems, problems) {
		l.capacity = nil
	}
	nd.seen, nd.labels, nd.devices, nd.source, nd.problems = true, n.Labels, devs, source, problems
	l.setNodeMemLocked(n.Name, nd, maxMemory(devs))
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
		l.capacity = nil
	}
	nd.seen, nd.labels, nd.devices, nd.source, nd.problems = false, nil, nil, "", nil
	l.setNodeMemLocked(name, nd, 0)
	l.gcNodeLocked(name)
}

// setNodeMemLocked changes a node's device memory and re-derives the pods
// whose memory percentages it resolves.
func (l *Ledger) setNodeMemLocked(name string, nd *node, mem int64) {
	if nd.maxMemMiB == mem {
		return
	}
	nd.maxMemMiB = mem
	recs := slices.Collect(maps.Values(nd.percent))
	for _, r := range recs {
		d := l.derive(r.pod, mem)
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

// nodeDevices reads a node's device annotations.
func nodeDevices(n *corev1.Node) ([]devices.Device, string, []Problem) {
	for _, key := range []string{devices.NodeDevicesAnnotation, devices.HAMiNodeRegisterAnnotation} {
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
			return nil, key, []Problem{{Kind: ProblemNode, Name: n.Name, Key: key, Value: truncate(value, 200),
				Message: "node has no known GPU devices: " + err.Error()}}
		}
		return devs, key, nil
	}
	return nil, "", nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
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
	if l.capacity == nil {
		l.capacity = l.buildCapacityLocked()
	}
	return l.capacity
}

func (l *Ledger) buildCapacityLocked() *Capacity {
	c := &Capacity{Nodes: map[string]*NodeCapacity{}}
	for name, nd := range l.nodes {
		if !nd.seen || nd.source == "" {
			continue
		}
		nc := &NodeCapacity{Name: name, Labels: maps.Clone(nd.labels), Source: nd.source,
			Devices: make([]DeviceCapacity, 0, len(nd.devices)), MaxDeviceMemMiB: nd.maxMemMiB,
			Problems: slices.Clone(nd.problems)}
		for _, d := range nd.devices {
			nc.Devices = append(nc.Devices, DeviceCapacity{UUID: d.UUID, Index: d.Index, Model: d.Model,
				MemMiB: d.MemoryMiB, Cores: d.Cores, Healthy: d.Healthy, MIG: d.MIGEnabled || d.ParentUUID != ""})
		}
		c.Nodes[name] = nc
	}
	return c
}
