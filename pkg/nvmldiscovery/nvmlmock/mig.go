package nvmlmock

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// ConfigureMIG enables MIG mode on dev and creates count GPU instances of
// the GPU instance profile giProfile (an nvml.GPU_INSTANCE_PROFILE_*), each
// with one compute instance spanning it, through the NVML API as an operator
// (nvidia-smi mig -cgi ... -C) would.
func ConfigureMIG(dev nvml.Device, giProfile, count int) error {
	if ret, _ := dev.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML SetMigMode: %w", ret)
	}
	info, ret := dev.GetGpuInstanceProfileInfo(giProfile)
	if ret != nvml.SUCCESS {
		return fmt.Errorf("NVML GetGpuInstanceProfileInfo(%d): %w", giProfile, ret)
	}
	for n := 0; n < count; n++ {
		gi, ret := dev.CreateGpuInstance(&info)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("NVML CreateGpuInstance(profile %d): %w", giProfile, ret)
		}
		ciProfile, err := fullComputeProfile(gi, int(info.SliceCount))
		if err != nil {
			return err
		}
		if _, ret := gi.CreateComputeInstance(&ciProfile); ret != nvml.SUCCESS {
			return fmt.Errorf("NVML CreateComputeInstance: %w", ret)
		}
	}
	return nil
}

// fullComputeProfile is the compute instance profile that spans all slices
// of a GPU instance.
func fullComputeProfile(gi nvml.GpuInstance, slices int) (nvml.ComputeInstanceProfileInfo, error) {
	for id := 0; id < nvml.COMPUTE_INSTANCE_PROFILE_COUNT; id++ {
		p, ret := gi.GetComputeInstanceProfileInfo(id, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
		if ret == nvml.SUCCESS && int(p.SliceCount) == slices {
			return p, nil
		}
	}
	return nvml.ComputeInstanceProfileInfo{}, fmt.Errorf("no compute instance profile spans %d slices", slices)
}

// newMigDevice is the MIG device handle of compute instance k.ci in GPU
// instance k.gi of parent, answering the queries NVML answers on a MIG handle.
func newMigDevice(parent *server.Device, k migKey) nvml.Device {
	giProfile := parent.Config.MIGProfiles.GpuInstanceProfiles[int(k.gi.Info.ProfileId)]
	ciProfile := parent.Config.MIGProfiles.ComputeInstanceProfiles[int(k.gi.Info.ProfileId)][int(k.ci.Info.ProfileId)]
	id := fmt.Sprintf("%s/%d/%d", parent.UUID, k.gi.Info.Id, k.ci.Info.Id)
	migUUID := "MIG-" + stableUUID(id)
	attrs := nvml.DeviceAttributes{
		MultiprocessorCount:       ciProfile.MultiprocessorCount,
		SharedCopyEngineCount:     ciProfile.SharedCopyEngineCount,
		SharedDecoderCount:        ciProfile.SharedDecoderCount,
		SharedEncoderCount:        ciProfile.SharedEncoderCount,
		SharedJpegCount:           ciProfile.SharedJpegCount,
		SharedOfaCount:            ciProfile.SharedOfaCount,
		GpuInstanceSliceCount:     giProfile.SliceCount,
		ComputeInstanceSliceCount: ciProfile.SliceCount,
		MemorySizeMB:              giProfile.MemorySizeMB,
	}
	name := parent.Config.Name + " MIG " + profileName(giProfile, ciProfile)
	return &mock.Device{
		GetUUIDFunc:       func() (string, nvml.Return) { return migUUID, nvml.SUCCESS },
		GetNameFunc:       func() (string, nvml.Return) { return name, nvml.SUCCESS },
		GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) { return attrs, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: giProfile.MemorySizeMB << 20}, nvml.SUCCESS
		},
		IsMigDeviceHandleFunc:                  func() (bool, nvml.Return) { return true, nvml.SUCCESS },
		GetDeviceHandleFromMigDeviceHandleFunc: func() (nvml.Device, nvml.Return) { return parent, nvml.SUCCESS },
		GetGpuInstanceIdFunc:                   func() (int, nvml.Return) { return int(k.gi.Info.Id), nvml.SUCCESS },
		GetComputeInstanceIdFunc:               func() (int, nvml.Return) { return int(k.ci.Info.Id), nvml.SUCCESS },
	}
}

// profileName is the MIG profile name NVML puts in a MIG device's name:
// "[<c>c.]<g>g.<GiB>gb", with "+me" for media-extension profiles.
func profileName(gi nvml.GpuInstanceProfileInfo, ci nvml.ComputeInstanceProfileInfo) string {
	name := fmt.Sprintf("%dg.%dgb", gi.SliceCount, (gi.MemorySizeMB+1023)/1024)
	if ci.SliceCount < gi.SliceCount {
		name = fmt.Sprintf("%dc.%s", ci.SliceCount, name)
	}
	if gi.Id == nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1 {
		name += "+me"
	}
	return name
}
