// Package nvmldiscovery reads the GPUs of this node through NVML and reports
// them as gpuadmit devices (pkg/devices): per physical GPU its UUID, index,
// model, total memory in MiB, SM count, MIG mode and health, and, on a GPU
// with MIG enabled, one device per MIG instance instead of the GPU itself.
//
// It depends only on go-nvml's nvml.Interface, so it runs unchanged on the
// real library (nvml.New()) and on go-nvml's mock servers. A Discoverer exists
// only after a successful nvmlInit: after a failed Init no NVML function is
// ever called (doing so can kill the process).
package nvmldiscovery
