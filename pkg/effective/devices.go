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
	roles, names := containerRoles(&pod.Spec)
	uuids, perUUID, err := deviceSlots(assign, names)
	if err != nil {
		return nil, err
	}
	if err := addDeviceUsage(perUUID, assign, names); err != nil {
		return nil, err
	}
	return collapsePerDevice(perUUID, uuids, roles, from)
}

// containerRoles returns the role and the name of every container of spec,
// init containers first, in spec order.
func containerRoles(spec *corev1.PodSpec) ([]Role, []string) {
	n := len(spec.InitContainers) + len(spec.Containers)
	roles := make([]Role, 0, n)
	names := make([]string, 0, n)
	for i := range spec.InitContainers {
		roles = append(roles, InitRole(&spec.InitContainers[i]))
		names = append(names, spec.InitContainers[i].Name)
	}
	for i := range spec.Containers {
		roles = append(roles, RoleApp)
		names = append(names, spec.Containers[i].Name)
	}
	return roles, names
}

// deviceSlots checks that assign names only containers of names, with no
// negative usage, and returns the assigned device UUIDs, sorted, each with
// one zero usage per container (indexed as names).
func deviceSlots(assign Assignment, names []string) ([]string, map[string][]Vector, error) {
	known := make(map[string]bool, len(names))
	for _, nm := range names {
		known[nm] = true
	}
	var uuids []string
	perUUID := map[string][]Vector{}
	for name, uses := range assign {
		if !known[name] {
			return nil, nil, fmt.Errorf("device assignment names container %q, which the pod does not have", name)
		}
		for _, u := range uses {
			if u.MemMiB < 0 || u.Cores < 0 {
				return nil, nil, fmt.Errorf("container %q: device %s: negative usage", name, u.UUID)
			}
			if _, ok := perUUID[u.UUID]; !ok {
				perUUID[u.UUID] = make([]Vector, len(names))
				uuids = append(uuids, u.UUID)
			}
		}
	}
	sort.Strings(uuids)
	return uuids, perUUID, nil
}

// addDeviceUsage adds each container's usage of each device it was assigned
// (one GPU, its memory and cores) to the container's slot of that device.
func addDeviceUsage(perUUID map[string][]Vector, assign Assignment, names []string) error {
	for i, name := range names {
		for _, u := range assign[name] {
			vecs := perUUID[u.UUID]
			sum, ok := vecs[i].Add(Vector{GPU: 1, MemMiB: u.MemMiB, Cores: u.Cores})
			if !ok {
				return fmt.Errorf("container %q: device %s: usage overflows", name, u.UUID)
			}
			vecs[i] = sum
		}
	}
	return nil
}

// collapsePerDevice applies the effective-demand formula to the
// per-container usage of each device, omitting devices whose result is zero.
func collapsePerDevice(perUUID map[string][]Vector, uuids []string, roles []Role, from int) (map[string]Vector, error) {
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
