package devices

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// ContainerDevice is one device assigned to one container.
type ContainerDevice struct {
	UUID      string
	Type      string
	UsedMem   int64 // in the backend's MemoryUnit: MiB for most
	UsedCores int64 // in the backend's CoreUnit: percent of the device for most
}

// DecodeAllocation parses the Pod annotation key of any HAMi backend that
// writes HAMi's per-container format (every BackendAnnotations.PodAllocated
// key, hami.io/vgpu-devices-allocated among them): one segment per
// container, separated by ';' (init containers first, then app containers,
// in spec order), each device "UUID,Type,Usedmem,Usedcores" followed by ':'.
// An empty segment is a container without devices. The ';' that ends the
// last segment is optional. key names the annotation in the errors.
func DecodeAllocation(key, value string) ([][]ContainerDevice, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	segs := strings.Split(value, ";")
	if segs[len(segs)-1] == "" {
		segs = segs[:len(segs)-1]
	}
	out := make([][]ContainerDevice, len(segs))
	for ci, seg := range segs {
		if seg == "" {
			continue
		}
		items := strings.Split(seg, ":")
		if items[len(items)-1] == "" {
			items = items[:len(items)-1]
		}
		for di, item := range items {
			d, err := decodeContainerDevice(item)
			if err != nil {
				return nil, fmt.Errorf("%s: container segment %d, device %d %q: %w", key, ci, di, item, err)
			}
			out[ci] = append(out[ci], d)
		}
	}
	return out, nil
}

func decodeContainerDevice(item string) (ContainerDevice, error) {
	f := strings.Split(item, ",")
	if len(f) != 4 {
		return ContainerDevice{}, fmt.Errorf("want 4 comma-separated fields UUID,Type,Usedmem,Usedcores, got %d", len(f))
	}
	d := ContainerDevice{UUID: strings.TrimSpace(f[0]), Type: f[1]}
	if d.UUID == "" {
		return d, fmt.Errorf("empty UUID")
	}
	var err error
	if d.UsedMem, err = nonNegative("Usedmem", f[2]); err != nil {
		return d, err
	}
	if d.UsedCores, err = nonNegative("Usedcores", f[3]); err != nil {
		return d, err
	}
	return d, nil
}

func nonNegative(field, s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s %q is not a non-negative integer", field, s)
	}
	return n, nil
}

// GpushareIndexAnnotation is the pod annotation Aliyun's gpushare
// scheduler extender writes: the index, on the pod's node, of the one GPU
// the pod's aliyun.com/gpu-mem shares.
const GpushareIndexAnnotation = "ALIYUN_COM_GPU_MEM_IDX"

// GpushareDevice is the device id gpuadmit charges a gpushare pod's
// memory to: GPU index idx of its node.
func GpushareDevice(idx int) string { return "aliyun-gpu-" + strconv.Itoa(idx) }

// PodAssignment reads the pod's hami.io/vgpu-devices-allocated annotation and
// maps its segments to container names (init containers first, then app
// containers, in spec order). A pod without the annotation has no assignment
// (nil, nil). A segment count that does not match the pod's containers is an
// error: positions would be ambiguous, and roles are never guessed.
func PodAssignment(pod *corev1.Pod) (effective.Assignment, error) {
	return PodAssignmentOf(pod, PodAllocatedAnnotation)
}

// PodAssignmentOf is PodAssignment of the pod's annotation key, in HAMi's
// per-container format (DecodeAllocation).
func PodAssignmentOf(pod *corev1.Pod, key string) (effective.Assignment, error) {
	value, ok := pod.Annotations[key]
	if !ok || strings.TrimSpace(value) == "" {
		return nil, nil
	}
	ctrs, err := DecodeAllocation(key, value)
	if err != nil {
		return nil, err
	}
	n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers)
	if len(ctrs) != n {
		return nil, fmt.Errorf("%s: %d container segments, but the pod has %d containers (%d init + %d app)",
			key, len(ctrs), n, len(pod.Spec.InitContainers), len(pod.Spec.Containers))
	}
	out := make(effective.Assignment, n)
	for i, devs := range ctrs {
		var name string
		if i < len(pod.Spec.InitContainers) {
			name = pod.Spec.InitContainers[i].Name
		} else {
			name = pod.Spec.Containers[i-len(pod.Spec.InitContainers)].Name
		}
		for _, d := range devs {
			out[name] = append(out[name], effective.DeviceUse{UUID: d.UUID, MemMiB: d.UsedMem, Cores: d.UsedCores})
		}
	}
	return out, nil
}

// AllocAnnotations are the pod annotations that assign devices to a pod of
// fams: HAMi's per-family assignment annotations (nvidia's first) and
// gpushare's device index.
func AllocAnnotations(fams []effective.Family) []string {
	out := []string{PodAllocatedAnnotation}
	for i := range fams {
		if k := fams[i].AllocAnno; k != "" && !slices.Contains(out, k) && fams[i].Rule != effective.RuleGpushare {
			out = append(out, k)
		}
	}
	return append(out, GpushareIndexAnnotation)
}
