package nvmldiscovery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// FullDeviceCores is the "cores" value of every reported device: 100 % of
// that device's SMs. A MIG instance is a device of its own, so it also
// reports 100 (its own SMs are in SMCount).
const FullDeviceCores = 100

// Optional NVML entry points: older drivers lack them, and calling a symbol
// the loaded library does not export is fatal, so each is looked up first.
const (
	symNumGpuCores  = "nvmlDeviceGetNumGpuCores"
	symRemappedRows = "nvmlDeviceGetRemappedRows"
	symMigMode      = "nvmlDeviceGetMigMode"
)

// Discoverer lists the devices of an initialised NVML library.
type Discoverer struct {
	lib             nvml.Interface
	hasNumGpuCores  bool
	hasRemappedRows bool
	hasMIG          bool
}

// Open initialises lib. When nvmlInit (or loading libnvidia-ml) fails it
// returns an *InitError and has called nothing but Init.
func Open(lib nvml.Interface) (*Discoverer, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, &InitError{Return: ret}
	}
	ext := lib.Extensions()
	return &Discoverer{
		lib:             lib,
		hasNumGpuCores:  ext.LookupSymbol(symNumGpuCores) == nil,
		hasRemappedRows: ext.LookupSymbol(symRemappedRows) == nil,
		hasMIG:          ext.LookupSymbol(symMigMode) == nil,
	}, nil
}

// Backoff is the retry schedule of OpenWait: Initial, doubled after every
// failure, capped at Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

// OpenWait calls Open until it succeeds or ctx ends, waiting per b between
// attempts and logging each failure. It is for nodes where the driver comes
// up after the agent (for example installed by the GPU operator). Only
// nvmlInit is retried; nothing else is called until one succeeds.
func OpenWait(ctx context.Context, lib nvml.Interface, b Backoff) (*Discoverer, error) {
	log := logr.FromContextOrDiscard(ctx)
	wait := b.Initial
	if wait <= 0 {
		wait = time.Second
	}
	for attempt := 1; ; attempt++ {
		d, err := Open(lib)
		if err == nil {
			if attempt > 1 {
				log.Info("NVML initialised", "attempts", attempt)
			}
			return d, nil
		}
		log.Error(err, "NVML not usable yet, retrying", "attempt", attempt, "retryIn", wait.String())
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("waiting for NVML: %w (last error: %w)", ctx.Err(), err)
		case <-timer.C:
		}
		wait *= 2
		if b.Max > 0 && wait > b.Max {
			wait = b.Max
		}
	}
}

// Close shuts NVML down.
func (d *Discoverer) Close() error {
	if ret := d.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("NVML shutdown: %w", ret)
	}
	return nil
}

// DriverVersion is the NVIDIA driver version NVML reports.
func (d *Discoverer) DriverVersion() (string, error) {
	v, ret := d.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return "", fmt.Errorf("NVML SystemGetDriverVersion: %w", ret)
	}
	return v, nil
}

// Devices lists the node's devices in NVML index order: each GPU without MIG,
// and each MIG instance (after its siblings, in NVML's MIG index order) of a
// GPU with MIG enabled; a MIG-enabled GPU itself is not listed, so no memory
// is counted twice. A GPU whose handle or UUID cannot be read is left out and
// logged (it cannot be addressed); a GPU with any other failed query is
// listed with Healthy false. Only a failure to count the GPUs is an error.
func (d *Discoverer) Devices(ctx context.Context) ([]devices.Device, error) {
	log := logr.FromContextOrDiscard(ctx)
	count, ret := d.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML DeviceGetCount: %w", ret)
	}
	out := make([]devices.Device, 0, count)
	for i := 0; i < count; i++ {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("listing NVML devices: %w", err)
		}
		h, ret := d.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			log.Error(fmt.Errorf("NVML DeviceGetHandleByIndex(%d): %w", i, ret), "GPU left out of the device list", "index", i)
			continue
		}
		gpu, err := d.gpu(ctx, i, h)
		if err != nil {
			log.Error(err, "GPU left out of the device list", "index", i)
			continue
		}
		out = append(out, gpu...)
	}
	return out, nil
}

// gpu reads one physical GPU: itself, or its MIG instances.
func (d *Discoverer) gpu(ctx context.Context, i int, h nvml.Device) ([]devices.Device, error) {
	log := logr.FromContextOrDiscard(ctx)
	uuid, ret := h.GetUUID()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML GetUUID of GPU %d: %w", i, ret)
	}
	var problems []error
	note := func(what string, ret nvml.Return) {
		problems = append(problems, fmt.Errorf("NVML %s: %w", what, ret))
	}
	dev := devices.Device{UUID: uuid, Index: i, Cores: FullDeviceCores}
	if idx, ret := h.GetIndex(); ret == nvml.SUCCESS {
		dev.Index = idx
	} else {
		note("GetIndex", ret)
	}
	if name, ret := h.GetName(); ret == nvml.SUCCESS {
		dev.Model = name
	} else {
		note("GetName", ret)
	}
	if mem, ret := h.GetMemoryInfo(); ret == nvml.SUCCESS {
		dev.MemoryMiB = bytesToMiB(mem.Total)
	} else {
		note("GetMemoryInfo", ret)
	}
	if d.hasMIG {
		switch current, _, ret := h.GetMigMode(); ret {
		case nvml.SUCCESS:
			dev.MIGEnabled = current == nvml.DEVICE_MIG_ENABLE
		case nvml.ERROR_NOT_SUPPORTED:
		default:
			note("GetMigMode", ret)
		}
	}
	problems = append(problems, d.healthProblems(h)...)
	dev.Healthy = len(problems) == 0
	if !dev.Healthy {
		log.Error(errors.Join(problems...), "GPU reported unhealthy", "uuid", uuid, "index", dev.Index)
	}
	if dev.MIGEnabled {
		return d.migInstances(ctx, dev, h), nil
	}
	dev.SMCount = d.smCount(ctx, h)
	return []devices.Device{dev}, nil
}

// smCount is the number of streaming multiprocessors of a full GPU. NVML's
// device attributes carry it, but NVML documents GetAttributes for MIG
// handles only; when it is not available the count is derived from the CUDA
// core count and the cores per SM of the compute capability (the table CUDA's
// own samples use). 0 means unknown (the field is then omitted).
func (d *Discoverer) smCount(ctx context.Context, h nvml.Device) int64 {
	if attrs, ret := h.GetAttributes(); ret == nvml.SUCCESS && attrs.MultiprocessorCount > 0 {
		return int64(attrs.MultiprocessorCount)
	}
	if !d.hasNumGpuCores {
		return 0
	}
	cores, ret := h.GetNumGpuCores()
	if ret != nvml.SUCCESS || cores <= 0 {
		return 0
	}
	major, minor, ret := h.GetCudaComputeCapability()
	if ret != nvml.SUCCESS {
		return 0
	}
	perSM := CoresPerSM(major, minor)
	if perSM == 0 || cores%perSM != 0 {
		logr.FromContextOrDiscard(ctx).V(1).Info("SM count unknown", "cudaCores", cores, "computeCapability", fmt.Sprintf("%d.%d", major, minor))
		return 0
	}
	return int64(cores / perSM)
}

// healthProblems are the reasons a GPU is unhealthy, none when it is healthy:
// a failed row remapping (uncorrectable memory errors that could not be
// remapped). Queries the GPU does not support are not problems.
func (d *Discoverer) healthProblems(h nvml.Device) []error {
	if !d.hasRemappedRows {
		return nil
	}
	_, _, _, failed, ret := h.GetRemappedRows()
	switch {
	case ret == nvml.ERROR_NOT_SUPPORTED:
		return nil
	case ret != nvml.SUCCESS:
		return []error{fmt.Errorf("NVML GetRemappedRows: %w", ret)}
	case failed:
		return []error{errors.New("row remapping failed: uncorrectable memory errors could not be remapped")}
	}
	return nil
}

func bytesToMiB(b uint64) int64 { return int64(b >> 20) }
