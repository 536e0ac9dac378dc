package nvmldiscovery

import (
	"context"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// migInstances lists the MIG instances of a MIG-enabled GPU. Each inherits
// the parent's index, model and health (an instance of an unhealthy GPU is
// unhealthy) and carries its own UUID, memory, SMs and profile name. Empty
// MIG slots (ERROR_NOT_FOUND) are skipped; an instance that cannot be read
// is left out and logged.
func (d *Discoverer) migInstances(ctx context.Context, parent devices.Device, h nvml.Device) []devices.Device {
	log := logr.FromContextOrDiscard(ctx)
	maxCount, ret := h.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		log.Error(fmt.Errorf("NVML GetMaxMigDeviceCount: %w", ret), "MIG instances of GPU not listed", "uuid", parent.UUID)
		return nil
	}
	var out []devices.Device
	for j := 0; j < maxCount; j++ {
		mig, ret := h.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue
		}
		if ret != nvml.SUCCESS {
			log.Error(fmt.Errorf("NVML GetMigDeviceHandleByIndex(%d): %w", j, ret), "MIG instance left out", "parentUUID", parent.UUID)
			continue
		}
		inst, err := migInstance(parent, mig)
		if err != nil {
			log.Error(err, "MIG instance left out", "parentUUID", parent.UUID, "migIndex", j)
			continue
		}
		if !inst.Healthy && parent.Healthy {
			log.Error(nil, "MIG instance reported unhealthy", "uuid", inst.UUID, "parentUUID", parent.UUID)
		}
		out = append(out, inst)
	}
	if len(out) == 0 {
		log.Info("GPU has MIG enabled but no MIG instance: it offers no device", "uuid", parent.UUID)
	}
	return out
}

// migInstance reads one MIG device handle.
func migInstance(parent devices.Device, mig nvml.Device) (devices.Device, error) {
	uuid, ret := mig.GetUUID()
	if ret != nvml.SUCCESS {
		return devices.Device{}, fmt.Errorf("NVML GetUUID of MIG device: %w", ret)
	}
	inst := devices.Device{
		UUID:       uuid,
		Index:      parent.Index,
		Model:      parent.Model,
		Cores:      FullDeviceCores,
		MIGEnabled: true,
		Healthy:    parent.Healthy,
		ParentUUID: parent.UUID,
	}
	attrs, ret := mig.GetAttributes()
	if ret != nvml.SUCCESS {
		inst.Healthy = false
	}
	inst.SMCount = int64(attrs.MultiprocessorCount)
	if mem, ret := mig.GetMemoryInfo(); ret == nvml.SUCCESS {
		inst.MemoryMiB = bytesToMiB(mem.Total)
	} else {
		inst.MemoryMiB = int64(attrs.MemorySizeMB)
	}
	name, ret := mig.GetName()
	if ret != nvml.SUCCESS {
		name = ""
	}
	inst.MIGProfile = MIGProfileName(name, attrs)
	return inst, nil
}

// MIGProfileName is the MIG profile of an instance, such as "1g.5gb" or
// "1c.3g.20gb". NVML names a MIG device "<GPU model> MIG <profile>", so the
// name is the source; without it the profile is rebuilt from the instance's
// attributes: compute and GPU slices, and memory rounded up to whole GiB.
func MIGProfileName(name string, attrs nvml.DeviceAttributes) string {
	if i := strings.LastIndex(name, " MIG "); i >= 0 {
		if p := strings.TrimSpace(name[i+len(" MIG "):]); p != "" {
			return p
		}
	}
	gi, ci := attrs.GpuInstanceSliceCount, attrs.ComputeInstanceSliceCount
	if gi == 0 {
		return ""
	}
	gb := (attrs.MemorySizeMB + 1023) / 1024
	if ci > 0 && ci < gi {
		return fmt.Sprintf("%dc.%dg.%dgb", ci, gi, gb)
	}
	return fmt.Sprintf("%dg.%dgb", gi, gb)
}
