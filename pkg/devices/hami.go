package devices

import (
	"encoding/json"
	"fmt"
)

// hamiMIGMode is the mode HAMi's nvidia device plugin registers a GPU in
// when it is MIG-partitioned.
const hamiMIGMode = "mig"

// DecodeHAMiNodeRegister parses hami.io/node-nvidia-register into gpuadmit
// devices. Both of HAMi's encodings are read (DecodeHAMiRegister): the JSON
// array of current releases and the older colon-separated list. A GPU
// registered in mode "mig" is MIGEnabled. Each device must also be a valid
// Device: cores above 100 (HAMi's deviceCoreScaling) are an error here; use
// DecodeHAMiRegister for the figures as HAMi books them.
func DecodeHAMiNodeRegister(value string) ([]Device, error) {
	regs, err := DecodeHAMiRegister(HAMiNodeRegisterAnnotation, value)
	if err != nil {
		return nil, err
	}
	devs := make([]Device, 0, len(regs))
	for i, r := range regs {
		d := Device{UUID: r.ID, Index: r.Index, Model: r.Type, MemoryMiB: r.MemoryMiB, Cores: r.Cores,
			MIGEnabled: r.Mode == hamiMIGMode, Healthy: r.Healthy}
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("%s: device [%d]: %w", HAMiNodeRegisterAnnotation, i, err)
		}
		devs = append(devs, d)
	}
	return devs, nil
}

// EncodeHAMiNodeRegister renders devices in HAMi's JSON registration format
// (count 10 per device, HAMi's default split count; mode "mig" for a
// MIGEnabled device, "hami-core" otherwise).
func EncodeHAMiNodeRegister(devs []Device) (string, error) {
	raw := make([]hamiJSONDevice, 0, len(devs))
	for i, d := range devs {
		if err := d.Validate(); err != nil {
			return "", fmt.Errorf("%s: device [%d]: %w", HAMiNodeRegisterAnnotation, i, err)
		}
		idx := int64(d.Index)
		mode := "hami-core"
		if d.MIGEnabled {
			mode = hamiMIGMode
		}
		raw = append(raw, hamiJSONDevice{ID: d.UUID, Index: &idx, Count: 10, Devmem: d.MemoryMiB, Devcore: d.Cores,
			Type: d.Model, Mode: mode, Health: d.Healthy})
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", HAMiNodeRegisterAnnotation, err)
	}
	return string(b), nil
}
