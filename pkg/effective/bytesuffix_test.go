package effective_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// TestMemoryWrittenAsBytes: HAMi reads a memory resource's value as a number
// of the family's memory units whatever its suffix (every backend's
// GenerateResourceRequests takes Value() or AsInt64() of the quantity: HAMi's
// pkg/device/nvidia/device.go reads nvidia.com/gpumem: 8Gi as 8589934592
// MiB), so a pod whose memory is written with a byte suffix is refused with
// the figure to write, in every family that does not read a suffix as bytes.
// A suffix with a value under 10^6 (the API server's canonical "3k" for
// 3000, or "16Ki" for 16384) is read as that number, as HAMi reads it.
func TestMemoryWrittenAsBytes(t *testing.T) {
	const nvmem = "nvidia.com/gpumem"
	for _, tc := range []struct {
		fam string
		c   famCase
	}{
		{"nvidia", famCase{name: "8Gi", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "8Gi")),
			err: `nvidia.com/gpumem "8Gi": is 8589934592 MiB as HAMi reads it (the number, whatever the suffix); as bytes it is 8192 MiB: write 8192`}},
		{"nvidia", famCase{name: "8G", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "8G")),
			err: `is 8000000000 MiB as HAMi reads it (the number, whatever the suffix); as bytes it is 7630 MiB: write 7630`}},
		{"nvidia", famCase{name: "8000Mi", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "8000Mi")),
			err: `as bytes it is 8000 MiB: write 8000`}},
		{"nvidia", famCase{name: "1.5Gi", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "1.5Gi")),
			err: `write 1536`}},
		{"nvidia", famCase{name: "8e9", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "8e9")),
			err: `is 8000000000 MiB as HAMi reads it`}},
		{"nvidia", famCase{name: "1M: under a MiB", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "1M")),
			err: `is 1000000 MiB as HAMi reads it (the number, whatever the suffix); as bytes it is less than 1 MiB`}},
		{"nvidia", famCase{name: "1Mi", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "1Mi")), err: `as bytes it is 1 MiB: write 1`}},
		{"nvidia", famCase{name: "16Ki is 16384 MiB, a shorthand HAMi reads the same", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "16Ki")), want: vec(1, 16384, 0)}},
		{"nvidia", famCase{name: "in the requests too", pod: pod(testpod.Request(res("nvidia.com/gpu", "1"), res(nvmem, "8Gi"))),
			err: `write 8192`}},
		{"nvidia", famCase{name: "3k is 3000 MiB", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "3k")), want: vec(1, 3000, 0)}},
		{"nvidia", famCase{name: "1e3 is 1000 MiB", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "1e3")), want: vec(1, 1000, 0)}},
		{"nvidia", famCase{name: "999999 MiB is a number", pod: pod(res("nvidia.com/gpu", "1"), res(nvmem, "999999")), want: vec(1, 999999, 0)}},
		{"nvidia", famCase{name: "a byte suffix on cores is out of range", pod: pod(res("nvidia.com/gpu", "1"), res("nvidia.com/gpucores", "1Ki")),
			err: `nvidia.com/gpucores "1Ki": must be within 0..100`}},
		{"nvidia", famCase{name: "a byte suffix on the percentage is out of range", pod: pod(res("nvidia.com/gpu", "1"), res("nvidia.com/gpumem-percentage", "1Ki")),
			err: `must be within 0..100`}},
		{"cambricon", famCase{name: "units of 256 MiB", pod: pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vmemory", "4Gi")),
			err: `is 4294967296 units of 256 MiB as HAMi reads it (the number, whatever the suffix); as bytes it is 4096 MiB: write 16`}},
		{"cambricon", famCase{name: "rounded up to a whole unit", pod: pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vmemory", "1000Mi")),
			err: `as bytes it is 1000 MiB: write 4`}},
		{"hygon", famCase{name: "dcumem", pod: pod(res("hygon.com/dcunum", "1"), res("hygon.com/dcumem", "8Gi")), err: `write 8192`}},
		{"iluvatar-MR-V100", famCase{name: "vMem", pod: pod(res("iluvatar.ai/MR-V100-vgpu", "1"), res("iluvatar.ai/MR-V100.vMem", "4Gi")), err: `write 16`}},
		{"amd", famCase{name: "gpumem", pod: pod(res("amd.com/gpu", "1"), res("amd.com/gpumem", "4Gi")), err: `write 4096`}},
		{"mthreads", famCase{name: "units of 512 MiB", pod: pod(res("mthreads.com/vgpu", "1"), res("mthreads.com/sgpu-memory", "4Gi")), err: `write 8`}},
		{"ascend-910B2", famCase{name: "templates", pod: pod(res("huawei.com/Ascend910B2", "1"), res("huawei.com/Ascend910B2-memory", "8Gi")), err: `write 8192`}},
		{"kunlun-vxpu", famCase{name: "templates", pod: pod(res("kunlunxin.com/vxpu", "1"), res("kunlunxin.com/vxpu-memory", "24Gi")), err: `write 24576`}},
		{"enflame", famCase{name: "as written", pod: pod(res("enflame.com/gcu-memory", "16G")), err: `write 15259`}},
		{"gpushare", famCase{name: "GiB units", pod: pod(res("aliyun.com/gpu-mem", "8Gi")), err: `units of 1024 MiB as HAMi reads it`}},
		{"metax-sgpu", famCase{name: "a suffix is bytes there", pod: pod(res("metax-tech.com/sgpu", "1"), res("metax-tech.com/vmemory", "4Gi")), want: vec(1, 4096, 100)}},
	} {
		t.Run(tc.fam, func(t *testing.T) { runFamily(t, tc.fam, []famCase{tc.c}) })
	}
}
