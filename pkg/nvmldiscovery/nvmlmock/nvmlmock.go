package nvmlmock

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	"github.com/google/uuid"
)

// Systems are the names New accepts, in a stable order.
func Systems() []string {
	return []string{"dgxa100", "dgxa100-mig", "dgxb200", "dgxh100", "dgxh200"}
}

// New returns a completed mock of a DGX system: "dgxa100", "dgxh100",
// "dgxh200", "dgxb200" (8 GPUs each, MIG disabled), or "dgxa100-mig" (a DGX
// A100 whose GPU 0 is split into seven 1g.5gb instances and GPU 1 into a
// 4g.20gb and a 3g.20gb instance).
func New(system string) (*server.Server, error) {
	var s *server.Server
	switch system {
	case "dgxa100", "dgxa100-mig":
		s = dgxa100.New()
	case "dgxb200":
		s = dgxb200.New()
	case "dgxh100":
		s = dgxh100.New()
	case "dgxh200":
		s = dgxh200.New()
	default:
		return nil, fmt.Errorf("unknown NVML mock system %q (known: %s)", system, strings.Join(Systems(), ", "))
	}
	Complete(s, system)
	if system == "dgxa100-mig" {
		if err := ConfigureMIG(s.Devices[0], nvml.GPU_INSTANCE_PROFILE_1_SLICE, 7); err != nil {
			return nil, err
		}
		if err := ConfigureMIG(s.Devices[1], nvml.GPU_INSTANCE_PROFILE_4_SLICE, 1); err != nil {
			return nil, err
		}
		if err := ConfigureMIG(s.Devices[1], nvml.GPU_INSTANCE_PROFILE_3_SLICE, 1); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// stableUUID is a name-based (SHA-1) UUID for name, in a namespace of its own.
func stableUUID(name string) string {
	namespace := uuid.UUID{0x6a, 0x1c, 0x7f, 0x3e, 0x2f, 0x1d, 0x4e, 0x0b, 0x9a, 0x52, 0x6d, 0x1f, 0x0c, 0x9b, 0x7e, 0x41}
	return uuid.NewSHA1(namespace, []byte(name)).String()
}

// Complete fills the methods of s and its devices that the mock leaves nil
// and the node agent calls, and replaces the random GPU UUIDs by stable ones
// derived from seed and the GPU index. Call it before any discovery.
func Complete(s *server.Server, seed string) {
	for i, d := range s.Devices {
		dev := d.(*server.Device)
		dev.UUID = "GPU-" + stableUUID(fmt.Sprintf("%s/%d", seed, i))
		completeDevice(dev)
	}
}

// cudaCores is the CUDA core count of each mocked model (SMs x cores per SM,
// from NVIDIA's product specifications).
func cudaCores(name string) (int, bool) {
	switch {
	case strings.Contains(name, "A100"):
		return 108 * 64, true
	case strings.Contains(name, "A30"):
		return 56 * 64, true
	case strings.Contains(name, "H100"), strings.Contains(name, "H200"):
		return 132 * 128, true
	case strings.Contains(name, "B200"):
		return 148 * 128, true
	}
	return 0, false
}

func completeDevice(dev *server.Device) {
	dev.GetAttributesFunc = func() (nvml.DeviceAttributes, nvml.Return) {
		// nvmlDeviceGetAttributes supports MIG device handles only.
		return nvml.DeviceAttributes{}, nvml.ERROR_NOT_SUPPORTED
	}
	dev.GetNumGpuCoresFunc = func() (int, nvml.Return) {
		if n, ok := cudaCores(dev.Config.Name); ok {
			return n, nvml.SUCCESS
		}
		return 0, nvml.ERROR_NOT_SUPPORTED
	}
	dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
		return 0, 0, false, false, nvml.SUCCESS
	}
	dev.IsMigDeviceHandleFunc = func() (bool, nvml.Return) { return false, nvml.SUCCESS }
	dev.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) {
		if len(dev.Config.MIGProfiles.GpuInstanceProfiles) == 0 {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
		return 7, nvml.SUCCESS
	}
	var mu sync.Mutex
	handles := map[migKey]nvml.Device{}
	dev.GetMigDeviceHandleByIndexFunc = func(index int) (nvml.Device, nvml.Return) {
		dev.RLock()
		enabled := dev.MigMode == nvml.DEVICE_MIG_ENABLE
		dev.RUnlock()
		if !enabled {
			return nil, nvml.ERROR_INVALID_ARGUMENT
		}
		keys := migKeys(dev)
		if index < 0 || index >= len(keys) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		k := keys[index]
		mu.Lock()
		defer mu.Unlock()
		h, ok := handles[k]
		if !ok {
			h = newMigDevice(dev, k)
			handles[k] = h
		}
		return h, nvml.SUCCESS
	}
}

// migKey identifies one MIG device: a compute instance in a GPU instance.
type migKey struct {
	gi *server.GpuInstance
	ci *server.ComputeInstance
}

// migKeys are the MIG devices of dev ordered by GPU instance id, then
// compute instance id: the order of NVML's MIG device indexes.
func migKeys(dev *server.Device) []migKey {
	dev.RLock()
	defer dev.RUnlock()
	var keys []migKey
	for gi := range dev.GpuInstances {
		gi.RLock()
		for ci := range gi.ComputeInstances {
			keys = append(keys, migKey{gi: gi, ci: ci})
		}
		gi.RUnlock()
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].gi.Info.Id != keys[b].gi.Info.Id {
			return keys[a].gi.Info.Id < keys[b].gi.Info.Id
		}
		return keys[a].ci.Info.Id < keys[b].ci.Info.Id
	})
	return keys
}
