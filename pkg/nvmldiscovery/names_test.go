package nvmldiscovery_test

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery"
)

func TestMIGProfileName(t *testing.T) {
	tests := []struct {
		name  string
		attrs nvml.DeviceAttributes
		want  string
	}{
		{"NVIDIA A100-SXM4-40GB MIG 1g.5gb", nvml.DeviceAttributes{}, "1g.5gb"},
		{"NVIDIA H100 80GB HBM3 MIG 1c.3g.40gb", nvml.DeviceAttributes{}, "1c.3g.40gb"},
		{"NVIDIA A100-SXM4-40GB MIG 1g.5gb+me", nvml.DeviceAttributes{}, "1g.5gb+me"},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 1, ComputeInstanceSliceCount: 1, MemorySizeMB: 4864}, "1g.5gb"},
		{"", nvml.DeviceAttributes{GpuInstanceSliceCount: 7, ComputeInstanceSliceCount: 7, MemorySizeMB: 40192}, "7g.40gb"},
		{"odd name", nvml.DeviceAttributes{GpuInstanceSliceCount: 3, ComputeInstanceSliceCount: 1, MemorySizeMB: 19968}, "1c.3g.20gb"},
		{"", nvml.DeviceAttributes{}, ""},
	}
	for _, tt := range tests {
		if got := nvmldiscovery.MIGProfileName(tt.name, tt.attrs); got != tt.want {
			t.Errorf("MIGProfileName(%q, %+v) = %q, want %q", tt.name, tt.attrs, got, tt.want)
		}
	}
}

func TestCoresPerSM(t *testing.T) {
	tests := []struct {
		major, minor, want int
	}{
		{7, 0, 64},   // V100
		{7, 5, 64},   // T4
		{8, 0, 64},   // A100, A30
		{8, 6, 128},  // A10, A40
		{8, 9, 128},  // L4, L40
		{9, 0, 128},  // H100, H200
		{10, 0, 128}, // B200
		{12, 0, 128}, // RTX PRO 6000 Blackwell
		{3, 5, 0},    // unknown: SM count left out
	}
	for _, tt := range tests {
		if got := nvmldiscovery.CoresPerSM(tt.major, tt.minor); got != tt.want {
			t.Errorf("CoresPerSM(%d, %d) = %d, want %d", tt.major, tt.minor, got, tt.want)
		}
	}
}
