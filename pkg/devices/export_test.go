package devices

// What only the tests use: the encoders that write HAMi's formats back (the
// production code only decodes; the tests round-trip), and thin wrappers
// naming one backend or one annotation. They live here, in the package's test
// build, so that `make lint`'s dead-code pass finds nothing in the shipped code.

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// DecodePodAllocation parses hami.io/vgpu-devices-allocated (DecodeAllocation
// of PodAllocatedAnnotation).
func DecodePodAllocation(value string) ([][]ContainerDevice, error) {
	return DecodeAllocation(PodAllocatedAnnotation, value)
}

// validate checks that d can be written in HAMi's per-container format.
func (d ContainerDevice) validate() error {
	switch {
	case strings.TrimSpace(d.UUID) == "" || strings.ContainsAny(d.UUID, ",:;"):
		return fmt.Errorf("UUID %q is empty or contains one of ,:;", d.UUID)
	case strings.ContainsAny(d.Type, ",:;"):
		return fmt.Errorf("type %q contains one of ,:;", d.Type)
	case d.UsedMem < 0 || d.UsedCores < 0:
		return fmt.Errorf("negative usage (memory %d, cores %d)", d.UsedMem, d.UsedCores)
	}
	return nil
}

// EncodePodAllocation renders per-container devices (init containers first,
// then app containers) in the hami.io/vgpu-devices-allocated format.
func EncodePodAllocation(ctrs [][]ContainerDevice) (string, error) {
	var b strings.Builder
	for ci, devs := range ctrs {
		for di, d := range devs {
			if err := d.validate(); err != nil {
				return "", fmt.Errorf("%s: container %d, device %d: %w", PodAllocatedAnnotation, ci, di, err)
			}
			fmt.Fprintf(&b, "%s,%s,%d,%d:", d.UUID, d.Type, d.UsedMem, d.UsedCores)
		}
		b.WriteByte(';')
	}
	return b.String(), nil
}

// PodAssignment is PodAssignmentOf the first of b.PodAllocated, the
// annotation HAMi books b's usage from; a backend without one assigns nothing.
func (b BackendAnnotations) PodAssignment(pod *corev1.Pod) (effective.Assignment, error) {
	if len(b.PodAllocated) == 0 {
		return nil, nil
	}
	return PodAssignmentOf(pod, b.PodAllocated[0])
}

// HAMiBackend returns the entry of HAMiAnnotations whose Backend is name.
func HAMiBackend(name string) (BackendAnnotations, bool) {
	for _, b := range HAMiAnnotations() {
		if b.Backend == name {
			return b, true
		}
	}
	return BackendAnnotations{}, false
}

// EncodeHAMiRegister renders devices in HAMi's JSON registration format
// (every field written, index included), which DecodeHAMiRegister reads back.
func EncodeHAMiRegister(devs []HAMiDevice) (string, error) {
	if err := validateHAMiDevices(devs); err != nil {
		return "", err
	}
	raw := make([]hamiJSONDevice, 0, len(devs))
	for _, d := range devs {
		idx := int64(d.Index)
		raw = append(raw, hamiJSONDevice{ID: d.ID, Index: &idx, Count: d.Count, Devmem: d.MemoryMiB, Devcore: d.Cores,
			Type: d.Type, Numa: d.Numa, Mode: d.Mode, Health: d.Healthy})
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
