package devices_test

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestHAMiAnnotationsTable(t *testing.T) {
	all := devices.HAMiAnnotations()
	if len(all) != 25 {
		t.Errorf("%d backends, want 25 (14 + 4 Iluvatar + 7 Ascend chips)", len(all))
	}
	names := map[string]bool{}
	keys := map[string]string{}
	claim := func(key, who string) {
		if other, dup := keys[key]; dup && key != "predicate-time" {
			t.Errorf("annotation %s used by %s and %s", key, other, who)
		}
		keys[key] = who
	}
	for _, b := range all {
		if names[b.Backend] || b.Backend == "" || b.Vendor == "" {
			t.Errorf("backend %+v: empty or repeated name", b)
		}
		names[b.Backend] = true
		if (b.NodeRegister == "") != (b.NodeEncoding == devices.EncodingCapacity) || (len(b.NodeCapacity) > 0) != (b.NodeEncoding == devices.EncodingCapacity) {
			t.Errorf("backend %s: register %q, encoding %s, capacity %v", b.Backend, b.NodeRegister, b.NodeEncoding, b.NodeCapacity)
		}
		if len(b.PodAllocated) == 0 || b.MemoryUnit == "" || b.CoreUnit == "" {
			t.Errorf("backend %s: no pod annotation or units", b.Backend)
		}
		for _, k := range slices.Concat([]string{b.NodeRegister, b.PodToAllocate}, b.PodAllocated, b.VendorPodAnnotations) {
			if k != "" {
				claim(k, b.Backend)
			}
		}
	}
	all[0].PodAllocated[0] = "changed"
	if devices.HAMiAnnotations()[0].PodAllocated[0] != devices.PodAllocatedAnnotation {
		t.Error("HAMiAnnotations shares its slices between calls")
	}
	if b, ok := devices.HAMiBackend("Ascend910B4-1"); !ok || b.NodeRegister != "hami.io/node-register-Ascend910B4-1" ||
		b.PodAllocated[0] != "hami.io/Ascend910B4-1-devices-allocated" {
		t.Errorf("Ascend910B4-1 = %+v, %v", b, ok)
	}
	if _, ok := devices.HAMiBackend("nvidia"); ok {
		t.Error("backend names are HAMi's device types (NVIDIA), case-sensitive")
	}
	if b := devices.IluvatarAnnotations("MR-V200"); b.NodeRegister != "hami.io/node-MR-V200-register" || b.Types[0] != "MR-V200" {
		t.Errorf("IluvatarAnnotations = %+v", b)
	}
}

// HAMi's own fixtures of every backend's pod assignment (paths of
// github.com/Project-HAMi/HAMi); each decodes under the backend's key and
// carries one of its Types.
func TestDecodeAllocationHAMiFixtures(t *testing.T) {
	dev := func(uuid, typ string, mem, cores int64) devices.ContainerDevice {
		return devices.ContainerDevice{UUID: uuid, Type: typ, UsedMem: mem, UsedCores: cores}
	}
	tests := []struct {
		name, backend, in string
		want              [][]devices.ContainerDevice
	}{
		// pkg/device/nvidia/device_test.go Test_PatchAnnotations.
		{name: "nvidia", backend: "NVIDIA", in: "nvidia-device-0,NVIDIA,2000,1:;",
			want: [][]devices.ContainerDevice{{dev("nvidia-device-0", "NVIDIA", 2000, 1)}}},
		// pkg/device/devices_test.go Test_DecodePodDevices "annos having two device".
		{name: "nvidia, two containers", backend: "NVIDIA",
			in: "GPU-8dcd427f-483b-b48f-d7e5-75fb19a52b76,NVIDIA,500,3:;GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,NVIDIA,500,3:;",
			want: [][]devices.ContainerDevice{{dev("GPU-8dcd427f-483b-b48f-d7e5-75fb19a52b76", "NVIDIA", 500, 3)},
				{dev("GPU-ebe7c3f7-303d-558d-435e-99a160631fe4", "NVIDIA", 500, 3)}}},
		// pkg/device/cambricon/device_test.go Test_PatchAnnotations (one, then a device-less first container).
		{name: "cambricon", backend: "MLU", in: "device-0,MLU,256000,1:;",
			want: [][]devices.ContainerDevice{{dev("device-0", "MLU", 256000, 1)}}},
		{name: "cambricon, leading empty container", backend: "MLU", in: ";device-0,MLU,256000,1:;",
			want: [][]devices.ContainerDevice{nil, {dev("device-0", "MLU", 256000, 1)}}},
		// pkg/device/hygon/device_test.go Test_PatchAnnotations.
		{name: "hygon", backend: "DCU", in: "test1,DCU,2048,1:;", want: [][]devices.ContainerDevice{{dev("test1", "DCU", 2048, 1)}}},
		// pkg/device/mthreads/device_test.go Test_PatchAnnotations.
		{name: "mthreads", backend: "Mthreads", in: "test1,Mthreads,1000,1:;", want: [][]devices.ContainerDevice{{dev("test1", "Mthreads", 1000, 1)}}},
		// pkg/device/awsneuron/device_test.go Test_PatchAnnotations (no ':' after the last device; cores a bit mask).
		{name: "awsneuron, two devices", backend: "AWSNeuron", in: "test1,AWSNeuron,0,2:test2,AWSNeuron,0,3;",
			want: [][]devices.ContainerDevice{{dev("test1", "AWSNeuron", 0, 2), dev("test2", "AWSNeuron", 0, 3)}}},
		{name: "awsneuron", backend: "AWSNeuron", in: "test1,AWSNeuron,0,3:;", want: [][]devices.ContainerDevice{{dev("test1", "AWSNeuron", 0, 3)}}},
		// pkg/device/enflame/gcu_test.go TestGCUDevices_PatchAnnotations.
		{name: "enflame gcu", backend: "GCU", in: "testnode-GCU-0,GCU,0,0:;", want: [][]devices.ContainerDevice{{dev("testnode-GCU-0", "GCU", 0, 0)}}},
		// pkg/device/enflame/device_test.go TestPatchAnnotations_DRSFields (the value its input encodes to).
		{name: "enflame drs", backend: "Enflame", in: "node-a-enflame-drs-0,Enflame,20480,50:;",
			want: [][]devices.ContainerDevice{{dev("node-a-enflame-drs-0", "Enflame", 20480, 50)}}},
		// pkg/device/ascend/device_test.go Test_PatchAnnotations (its fixture's type is "Ascend", HAMi writes the chip's).
		{name: "ascend", backend: "Ascend910A", in: "device-0,Ascend910A,8738,1:;", want: [][]devices.ContainerDevice{{dev("device-0", "Ascend910A", 8738, 1)}}},
		// pkg/device/iluvatar/device_test.go TestPatchAnnotations.
		{name: "iluvatar", backend: "MR-V100", in: "k8s-gpu-iluvatar-0,MR-V100,0,0:;", want: [][]devices.ContainerDevice{{dev("k8s-gpu-iluvatar-0", "MR-V100", 0, 0)}}},
		// pkg/device/biren/device_test.go and pkg/device/vastai/device_test.go Test_PatchAnnotations.
		{name: "biren", backend: "Biren", in: "test1,Biren,2048,1:;", want: [][]devices.ContainerDevice{{dev("test1", "Biren", 2048, 1)}}},
		{name: "vastai", backend: "Vastai", in: "test1,Vastai,2048,1:;", want: [][]devices.ContainerDevice{{dev("test1", "Vastai", 2048, 1)}}},
		// pkg/device/kunlun/vdevice_test.go Test_KunlunVDevices_PatchAnnotations (the value its input encodes to).
		{name: "kunlun vxpu", backend: "XPU", in: "xpu-0,XPU,24576,100:;", want: [][]devices.ContainerDevice{{dev("xpu-0", "XPU", 24576, 100)}}},
		// pkg/device/amd/device_test.go Test_PatchAnnotations (the value its input encodes to; cores in CUs).
		{name: "amd", backend: "AMD", in: "test1,AMD,100,3:test2,AMD,200,4:;",
			want: [][]devices.ContainerDevice{{dev("test1", "AMD", 100, 3), dev("test2", "AMD", 200, 4)}}},
		// pkg/device/metax/protocol_test.go TestConvertHAMIPodDeviceToMetaxPodDevice (its input, HAMi's form).
		{name: "metax sgpu", backend: "Metax-SGPU",
			in: "GPU-a0,Metax-SGPU,10,50:GPU-a1,Metax-SGPU,1024,30:;GPU-a3,Metax-SGPU,10240,20:;",
			want: [][]devices.ContainerDevice{{dev("GPU-a0", "Metax-SGPU", 10, 50), dev("GPU-a1", "Metax-SGPU", 1024, 30)},
				{dev("GPU-a3", "Metax-SGPU", 10240, 20)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := backend(t, tt.backend)
			got, err := devices.DecodeAllocation(b.PodAllocated[0], tt.in)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
			for _, ctr := range got {
				for _, d := range ctr {
					if b.Types != nil && !slices.Contains(b.Types, d.Type) {
						t.Errorf("type %q is not one of %v", d.Type, b.Types)
					}
				}
			}
		})
	}
	// pkg/device/devices_test.go TestDecodePodDevices_BadAnnotation.
	_, err := devices.DecodeAllocation("hami.io/vgpu-devices-to-allocate", "uuid,type,100:;")
	if err == nil || !strings.Contains(err.Error(), `hami.io/vgpu-devices-to-allocate: container segment 0, device 0 "uuid,type,100": want 4`) {
		t.Errorf("three fields: %v", err)
	}
}

func TestBackendPodAssignment(t *testing.T) {
	ascend := devices.AscendAnnotations("Ascend910B2")
	pod := testpod.New("p").Init("setup", testpod.CPU("1")).App("a", testpod.CPU("1")).
		Annotate(ascend.PodAllocated[0], ";npu-0,Ascend910B2,16384,6:;").
		Annotate(devices.PodAllocatedAnnotation, ";GPU-a,NVIDIA,100,0:;").Build()
	got, err := ascend.PodAssignment(pod)
	if want := (effective.Assignment{"a": {{UUID: "npu-0", MemMiB: 16384, Cores: 6}}}); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ascend assignment = %+v, %v; want %+v", got, err, want)
	}
	if got, err := backend(t, "NVIDIA").PodAssignment(pod); err != nil || got["a"][0].UUID != "GPU-a" {
		t.Errorf("nvidia assignment = %+v, %v", got, err)
	}
	if got, err := backend(t, "DCU").PodAssignment(pod); got != nil || err != nil {
		t.Errorf("no DCU annotation: %+v, %v", got, err)
	}
	bad := testpod.New("p").App("a", testpod.CPU("1")).Annotate(ascend.PodAllocated[0], "npu-0,Ascend910B2,x,6:;").Build()
	if _, err := ascend.PodAssignment(bad); err == nil || !strings.HasPrefix(err.Error(), "hami.io/Ascend910B2-devices-allocated: container segment 0") {
		t.Errorf("bad memory: %v", err)
	}
	if got, err := (devices.BackendAnnotations{}).PodAssignment(pod); got != nil || err != nil {
		t.Errorf("backend without pod annotations: %+v, %v", got, err)
	}
}
