package devices_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestNodeDevicesRoundTrip(t *testing.T) {
	devs := []devices.Device{
		{UUID: "GPU-8f6e", Index: 0, Model: "NVIDIA H200", MemoryMiB: 143771, Cores: 100, SMCount: 132, Healthy: true},
		{UUID: "MIG-1", Index: 1, Model: "NVIDIA A100 MIG 1g.5gb", MemoryMiB: 4864, Cores: 100, SMCount: 14, MIGEnabled: true,
			Healthy: true, ParentUUID: "GPU-a100", MIGProfile: "1g.5gb"},
	}
	s, err := devices.EncodeNodeDevices(devs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"uuid":"GPU-8f6e","index":0,"model":"NVIDIA H200","memoryMiB":143771,"cores":100,"smCount":132,"migEnabled":false,"healthy":true},` +
		`{"uuid":"MIG-1","index":1,"model":"NVIDIA A100 MIG 1g.5gb","memoryMiB":4864,"cores":100,"smCount":14,"migEnabled":true,"healthy":true,"parentUUID":"GPU-a100","migProfile":"1g.5gb"}]`
	if s != want {
		t.Errorf("encoded\n%s\nwant\n%s", s, want)
	}
	back, err := devices.DecodeNodeDevices(s)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, devs) {
		t.Errorf("round trip = %+v", back)
	}
	if empty, _ := devices.EncodeNodeDevices(nil); empty != "[]" {
		t.Errorf("nil encodes as %q", empty)
	}
}

func TestDecodeNodeDevices(t *testing.T) {
	tests := []struct {
		in, wantErr string
		want        []devices.Device
	}{
		{in: `[{"uuid":"GPU-a","memoryMiB":24576}]`, want: []devices.Device{{UUID: "GPU-a", MemoryMiB: 24576, Cores: 100, Healthy: true}}},
		{in: `[{"uuid":"GPU-a","memoryMiB":1,"cores":50,"healthy":false,"futureField":{"x":1}}]`,
			want: []devices.Device{{UUID: "GPU-a", MemoryMiB: 1, Cores: 50}}},
		{in: `[]`, want: []devices.Device{}},
		{in: ``, wantErr: "empty value"},
		{in: `{"uuid":"GPU-a"}`, wantErr: "not a JSON array"},
		{in: `[{"uuid":"GPU-a","memoryMiB":1}] x`, wantErr: "trailing data"},
		{in: `[1]`, wantErr: "device [0] is not a JSON object"},
		{in: `[null]`, wantErr: "device [0] is not a JSON object"},
		{in: `[{"memoryMiB":1}]`, wantErr: `device [0]: missing field "uuid"`},
		{in: `[{"uuid":"GPU-a"}]`, wantErr: `device [0]: missing field "memoryMiB"`},
		{in: `[{"uuid":"GPU-a","memoryMiB":"lots"}]`, wantErr: "device [0]: json: cannot unmarshal string"},
		{in: `[{"uuid":"GPU-a","memoryMiB":1.5}]`, wantErr: "device [0]: json: cannot unmarshal number 1.5"},
		{in: `[{"uuid":"GPU-a","memoryMiB":-1}]`, wantErr: `field "memoryMiB" must be positive, got -1`},
		// A node writing 0 would make its whole-card pods free.
		{in: `[{"uuid":"GPU-a","memoryMiB":0}]`, wantErr: `field "memoryMiB" must be positive, got 0`},
		{in: `[{"uuid":"GPU-a","memoryMiB":1,"cores":101}]`, wantErr: `field "cores" must be within 0..100`},
		{in: `[{"uuid":" ","memoryMiB":1}]`, wantErr: `field "uuid" is empty`},
		{in: `[{"uuid":"GPU,a","memoryMiB":1}]`, wantErr: `contains one of ,:;`},
		{in: `[{"uuid":"GPU-a","memoryMiB":1},{"uuid":"GPU-a","memoryMiB":2}]`, wantErr: `device [1]: uuid "GPU-a" already used by device [0]`},
	}
	for _, tt := range tests {
		got, err := devices.DecodeNodeDevices(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DecodeNodeDevices(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DecodeNodeDevices(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestDecodeHAMiNodeRegister(t *testing.T) {
	v100 := func(id string, idx int) devices.Device {
		return devices.Device{UUID: id, Index: idx, Model: "NVIDIA-Tesla V100-PCIE-32GB", MemoryMiB: 32768, Cores: 100, Healthy: true}
	}
	tests := []struct {
		name, in, wantErr string
		want              []devices.Device
	}{
		{name: "legacy colon format",
			in:   "GPU-0055,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:GPU-0fc3,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:",
			want: []devices.Device{v100("GPU-0055", 0), v100("GPU-0fc3", 1)}},
		{name: "JSON format",
			in:   `[{"id":"GPU-0055","index":3,"count":10,"devmem":32768,"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB","numa":0,"mode":"hami-core","health":true}]`,
			want: []devices.Device{v100("GPU-0055", 3)}},
		{name: "legacy: too few fields", in: "GPU-a,10,32768:", wantErr: "device [0] \"GPU-a,10,32768\": want 7 comma-separated fields"},
		{name: "legacy: bad memory", in: "GPU-a,10,big,100,T,0,true:", wantErr: `device [0] "GPU-a,10,big,100,T,0,true": field devmem "big" is not an integer`},
		{name: "legacy: bad health", in: "GPU-a,10,1,100,T,0,maybe:", wantErr: `field health "maybe" is not a boolean`},
		{name: "JSON: negative memory", in: `[{"id":"GPU-a","count":1,"devmem":-5,"devcore":100}]`, wantErr: `field devmem (MiB) must be within 1..2147483647, got -5`},
		{name: "JSON: no memory", in: `[{"id":"GPU-a","count":1,"devmem":0,"devcore":100}]`, wantErr: `field devmem (MiB) must be within 1..2147483647, got 0`},
		// A GPU in MIG mode (HAMi's nvidia TestGetNodeDevices_MigProfilesFromNode registers one so).
		{name: "JSON: MIG mode",
			in: `[{"id":"GPU-0","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA-A100-SXM4-40GB","numa":0,"health":true,"mode":"mig",` +
				`"migProfiles":[{"name":"1g.5gb","memoryMB":5120,"core":14,"sliceCount":1,"instanceCount":7,"placements":[{"start":6,"size":1}]}]}]`,
			want: []devices.Device{{UUID: "GPU-0", Model: "NVIDIA-A100-SXM4-40GB", MemoryMiB: 40960, Cores: 100, MIGEnabled: true, Healthy: true}}},
		// HAMi's deviceCoreScaling registers more than 100 cores: not a gpuadmit Device.
		{name: "JSON: scaled cores", in: `[{"id":"GPU-a","count":1,"devmem":1,"devcore":200}]`, wantErr: `field "cores" must be within 0..100, got 200`},
		{name: "JSON: broken", in: `[{"id":`, wantErr: "not a JSON array of devices"},
		{name: "duplicate id", in: "GPU-a,10,1,100,T,0,true:GPU-a,10,1,100,T,0,true", wantErr: `id "GPU-a" already used`},
		{name: "empty", in: " ", wantErr: "empty value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := devices.DecodeHAMiNodeRegister(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			enc, err := devices.EncodeHAMiNodeRegister(got)
			if err != nil {
				t.Fatal(err)
			}
			back, err := devices.DecodeHAMiNodeRegister(enc)
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip = %+v, %v", back, err)
			}
		})
	}
}

func TestPodAllocation(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		want              [][]devices.ContainerDevice
	}{
		{name: "design example: one init, one app",
			in: "GPU-a,NVIDIA,20480,10:;GPU-a,NVIDIA,10240,5:;",
			want: [][]devices.ContainerDevice{{{UUID: "GPU-a", Type: "NVIDIA", UsedMem: 20480, UsedCores: 10}},
				{{UUID: "GPU-a", Type: "NVIDIA", UsedMem: 10240, UsedCores: 5}}}},
		{name: "GPU-less init: empty segment, two devices in one container",
			in: ";GPU-a,NVIDIA,1000,0:GPU-b,NVIDIA,1000,0:;",
			want: [][]devices.ContainerDevice{nil, {{UUID: "GPU-a", Type: "NVIDIA", UsedMem: 1000},
				{UUID: "GPU-b", Type: "NVIDIA", UsedMem: 1000}}}},
		{name: "no trailing separators", in: "GPU-a,NVIDIA,1,2",
			want: [][]devices.ContainerDevice{{{UUID: "GPU-a", Type: "NVIDIA", UsedMem: 1, UsedCores: 2}}}},
		{name: "empty", in: "", want: nil},
		{name: "three fields", in: "GPU-a,NVIDIA,1:;", wantErr: "container segment 0, device 0 \"GPU-a,NVIDIA,1\": want 4 comma-separated fields"},
		{name: "bad memory", in: ";GPU-a,NVIDIA,x,0:;", wantErr: `container segment 1, device 0 "GPU-a,NVIDIA,x,0": Usedmem "x" is not a non-negative integer`},
		{name: "negative cores", in: "GPU-a,NVIDIA,1,-3:;", wantErr: `Usedcores "-3" is not a non-negative integer`},
		{name: "empty uuid", in: ",NVIDIA,1,3:;", wantErr: "empty UUID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := devices.DecodePodAllocation(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			enc, err := devices.EncodePodAllocation(got)
			if err != nil {
				t.Fatal(err)
			}
			back, err := devices.DecodePodAllocation(enc)
			if err != nil || !reflect.DeepEqual(back, got) {
				t.Fatalf("round trip %q = %+v, %v", enc, back, err)
			}
		})
	}
}

func TestPodAssignment(t *testing.T) {
	base := func() *testpod.Builder {
		return testpod.New("p").Init("setup", testpod.CPU("1")).App("a", testpod.GPU(1)).App("b", testpod.GPU(1))
	}
	got, err := devices.PodAssignment(base().Annotate(devices.PodAllocatedAnnotation, ";GPU-a,NVIDIA,100,0:;GPU-b,NVIDIA,200,5:;").Build())
	if err != nil {
		t.Fatal(err)
	}
	want := effective.Assignment{"a": {{UUID: "GPU-a", MemMiB: 100}}, "b": {{UUID: "GPU-b", MemMiB: 200, Cores: 5}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("assignment = %+v, want %+v (the GPU-less init keeps its empty segment)", got, want)
	}
	if a, err := devices.PodAssignment(base().Build()); a != nil || err != nil {
		t.Errorf("no annotation: %v, %v", a, err)
	}
	_, err = devices.PodAssignment(base().Annotate(devices.PodAllocatedAnnotation, "GPU-a,NVIDIA,100,0:;GPU-b,NVIDIA,200,5:;").Build())
	if err == nil || !strings.Contains(err.Error(), "2 container segments, but the pod has 3 containers (1 init + 2 app)") {
		t.Errorf("segment mismatch error = %v", err)
	}
}
