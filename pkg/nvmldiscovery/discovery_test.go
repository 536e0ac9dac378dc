package nvmldiscovery_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery"
	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery/nvmlmock"
)

// newMock is the test helper: a go-nvml mock DGX server with the methods the
// mock leaves nil filled in (nvmlmock.Complete), ready for discovery.
func newMock(t *testing.T, system string) *server.Server {
	t.Helper()
	s, err := nvmlmock.New(system)
	if err != nil {
		t.Fatalf("nvmlmock.New(%q): %v", system, err)
	}
	return s
}

func discover(t *testing.T, lib nvml.Interface) []devices.Device {
	t.Helper()
	d, err := nvmldiscovery.Open(lib)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	devs, err := d.Devices(context.Background())
	if err != nil {
		t.Fatalf("Devices: %v", err)
	}
	return devs
}

func gpuUUID(s *server.Server, i int) string { return s.Devices[i].(*server.Device).UUID }

// TestDevicesFullGPUs checks every field on the mock DGX systems, MIG off:
// what the mock reports (model name, memory) and what discovery derives
// (SMs from CUDA cores, because NVML has no device attributes for full GPUs).
func TestDevicesFullGPUs(t *testing.T) {
	tests := []struct {
		system    string
		model     string
		memoryMiB int64
		smCount   int64
	}{
		{"dgxh200", "NVIDIA H200 141GB HBM3e", 144384, 132},
		{"dgxh100", "NVIDIA H100 80GB HBM3", 81920, 132},
		{"dgxa100", "Mock NVIDIA A100-SXM4-40GB", 40960, 108},
		{"dgxb200", "NVIDIA B200 180GB HBM3e", 184320, 148},
	}
	for _, tt := range tests {
		t.Run(tt.system, func(t *testing.T) {
			s := newMock(t, tt.system)
			got := discover(t, s)
			want := make([]devices.Device, 8)
			for i := range want {
				want[i] = devices.Device{
					UUID: gpuUUID(s, i), Index: i, Model: tt.model, MemoryMiB: tt.memoryMiB,
					Cores: 100, SMCount: tt.smCount, MIGEnabled: false, Healthy: true,
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("devices:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestDevicesMIG checks that a MIG-enabled GPU is replaced by its MIG
// instances, each with its own memory, SMs and profile, and its parent set.
func TestDevicesMIG(t *testing.T) {
	s := newMock(t, "dgxa100-mig")
	got := discover(t, s)
	if len(got) != 7+2+6 {
		t.Fatalf("got %d devices, want 15 (7 + 2 MIG instances, 6 full GPUs): %+v", len(got), got)
	}
	const model = "Mock NVIDIA A100-SXM4-40GB"
	type inst struct {
		parent    int
		profile   string
		memoryMiB int64
		smCount   int64
	}
	var want []inst
	for range 7 {
		want = append(want, inst{0, "1g.5gb", 4864, 14})
	}
	want = append(want, inst{1, "4g.20gb", 19968, 56}, inst{1, "3g.20gb", 19968, 42})
	seen := map[string]bool{}
	for i, w := range want {
		d := got[i]
		t.Run(fmt.Sprintf("mig-%d", i), func(t *testing.T) {
			if !strings.HasPrefix(d.UUID, "MIG-") || seen[d.UUID] {
				t.Errorf("UUID %q: want a unique MIG- UUID", d.UUID)
			}
			seen[d.UUID] = true
			wantDev := devices.Device{
				UUID: d.UUID, Index: w.parent, Model: model, MemoryMiB: w.memoryMiB, Cores: 100,
				SMCount: w.smCount, MIGEnabled: true, Healthy: true,
				ParentUUID: gpuUUID(s, w.parent), MIGProfile: w.profile,
			}
			if d != wantDev {
				t.Errorf("\n got %+v\nwant %+v", d, wantDev)
			}
		})
	}
	for i, d := range got[len(want):] {
		if d.MIGEnabled || d.ParentUUID != "" || d.Index != i+2 || d.UUID != gpuUUID(s, i+2) || d.SMCount != 108 {
			t.Errorf("full GPU %d: got %+v", i+2, d)
		}
	}
}

// TestDevicesStable: the same node yields byte-identical annotation values,
// across refreshes and across processes (stable mock UUIDs), and they decode
// back to the same devices.
func TestDevicesStable(t *testing.T) {
	for _, system := range nvmlmock.Systems() {
		t.Run(system, func(t *testing.T) {
			first, err := devices.EncodeNodeDevices(discover(t, newMock(t, system)))
			if err != nil {
				t.Fatal(err)
			}
			lib := newMock(t, system)
			for range 2 {
				again, err := devices.EncodeNodeDevices(discover(t, lib))
				if err != nil {
					t.Fatal(err)
				}
				if again != first {
					t.Fatalf("annotation changed between runs:\n%s\n%s", first, again)
				}
			}
			decoded, err := devices.DecodeNodeDevices(first)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(decoded, discover(t, lib)) {
				t.Fatalf("decode(encode(devices)) differs from devices")
			}
		})
	}
}
