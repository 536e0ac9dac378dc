package effective

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// DeviceUse is what one container uses on one device.
type DeviceUse struct {
	UUID   string
	MemMiB int64
	Cores  int64
}

// Assignment maps a container name to the devices it was assigned.
type Assignment map[string][]DeviceUse

// CollapseDevices applies the effective-demand formula per device UUID over
// the per-container usage on that UUID, counting regular init containers at
// index from or later of spec.initContainers (0 = all). An init container and
// an app container on different devices are never merged: each device gets
// its own max(steady, initPeak). Devices whose collapsed usage is zero are
// omitted.
func CollapseDevices(pod *corev1.Pod, assign Assignment, from int) (map[string]Vector, error) {
	spec := &pod.Spec
	n := len(spec.InitContainers) + len(spec.Containers)
	roles := make([]Role, 0, n)
	names := make([]string, 0, n)
	for i := range spec.InitContainers {
		roles = append(roles, initRole(&spec.InitContainers[i]))
		names = append(names, spec.InitContainers[i].Name)
	}
	for i := range spec.Containers {
		roles = append(roles, RoleApp)
		names = append(names, spec.Containers[i].Name)
	}
	known := make(map[string]bool, n)
	for _, nm := range names {
		known[nm] = true
	}
	var uuids []string
	perUUID := map[string][]Vector{}
	for name, uses := range assign {
		if !known[name] {
			return nil, fmt.Errorf("device assignment names container %q, which the pod does not have", name)
		}
		for _, u := range uses {
			if u.MemMiB < 0 || u.Cores < 0 {
				return nil, fmt.Errorf("container %q: device %s: negative usage", name, u.UUID)
			}
			if _, ok := perUUID[u.UUID]; !ok {
				perUUID[u.UUID] = make([]Vector, n)
				uuids = append(uuids, u.UUID)
			}
		}
	}
	sort.Strings(uuids)
	for i, name := range names {
		for _, u := range assign[name] {
			vecs := perUUID[u.UUID]
			sum, ok := vecs[i].Add(Vector{GPU: 1, MemMiB: u.MemMiB, Cores: u.Cores})
			if !ok {
				return nil, fmt.Errorf("container %q: device %s: usage overflows", name, u.UUID)
			}
			vecs[i] = sum
		}
	}
	out := make(map[string]Vector, len(uuids))
	for _, id := range uuids {
		v, ok := combine(perUUID[id], roles, from)
		if !ok {
			return nil, fmt.Errorf("device %s: usage overflows", id)
		}
		if !v.IsZero() {
			out[id] = v
		}
	}
	return out, nil
}
