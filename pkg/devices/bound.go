package devices

import (
	"fmt"
	"strings"
)

// DefaultMaxDeviceMemoryMiB is the plausibility bound of a device's memory
// when the configuration names none for its family: 1 TiB. The largest
// devices of every HAMi family hold at most 288 GB (NVIDIA B300, AMD
// MI355X) and HAMi's deviceMemoryScaling may multiply a registered figure;
// 1 TiB leaves room for both and the next generation.
const DefaultMaxDeviceMemoryMiB int64 = 1 << 20

// ImplausibleError names the devices of an announcement whose memory is
// above the plausibility bound of their family: the node announced them,
// gpuadmit does not believe them.
type ImplausibleError struct {
	// Key is the annotation the devices were announced in.
	Key string
	// BoundMiB is the family's bound.
	BoundMiB int64
	// Devices are "id (N MiB)" of each device above the bound.
	Devices []string
}

// Error names the annotation, the devices and the bound.
func (e *ImplausibleError) Error() string {
	return fmt.Sprintf("%s: device %s announces more memory than the family's bound of %d MiB "+
		"(capacity.maxDeviceMemoryMiB): not used to size any charge",
		e.Key, strings.Join(e.Devices, ", "), e.BoundMiB)
}

// BoundDevices returns devs without the devices whose memory is above
// boundMiB, and an *ImplausibleError naming them (nil when there are none).
// A bound of 0 or less is DefaultMaxDeviceMemoryMiB.
func BoundDevices(key string, devs []Device, boundMiB int64) ([]Device, error) {
	return bound(key, devs, boundMiB, func(d Device) (string, int64) { return d.UUID, d.MemoryMiB })
}

// BoundHAMiDevices is BoundDevices for a HAMi backend's devices.
func BoundHAMiDevices(key string, devs []HAMiDevice, boundMiB int64) ([]HAMiDevice, error) {
	return bound(key, devs, boundMiB, func(d HAMiDevice) (string, int64) { return d.ID, d.MemoryMiB })
}

func bound[D any](key string, devs []D, boundMiB int64, of func(D) (string, int64)) ([]D, error) {
	if boundMiB <= 0 {
		boundMiB = DefaultMaxDeviceMemoryMiB
	}
	var e *ImplausibleError
	for _, d := range devs {
		if id, mem := of(d); mem > boundMiB {
			if e == nil {
				e = &ImplausibleError{Key: key, BoundMiB: boundMiB}
			}
			e.Devices = append(e.Devices, fmt.Sprintf("%q (%d MiB)", id, mem))
		}
	}
	if e == nil {
		return devs, nil
	}
	kept := make([]D, 0, len(devs)-len(e.Devices))
	for _, d := range devs {
		if _, mem := of(d); mem <= boundMiB {
			kept = append(kept, d)
		}
	}
	return kept, e
}
