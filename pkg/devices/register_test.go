package devices_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

func backend(t *testing.T, name string) devices.BackendAnnotations {
	t.Helper()
	b, ok := devices.HAMiBackend(name)
	if !ok {
		t.Fatalf("no HAMi backend %q", name)
	}
	return b
}

// HAMi's own fixtures of every backend's node registration; the paths are
// of github.com/Project-HAMi/HAMi.
func TestDecodeNodeRegisterHAMiFixtures(t *testing.T) {
	tests := []struct {
		name, backend, node, in string
		want                    []devices.HAMiDevice
	}{
		// pkg/device/nvidia/device_test.go Test_GetNodeDevices.
		{name: "nvidia JSON", backend: "NVIDIA",
			in:   `[{"id":"GPU-0","count":5,"devmem":8192,"devcore":100,"type":"NVIDIA-Tesla P4","numa":0,"health":true,"index":0}]`,
			want: []devices.HAMiDevice{{ID: "GPU-0", Count: 5, MemoryMiB: 8192, Cores: 100, Type: "NVIDIA-Tesla P4", Healthy: true}}},
		// pkg/device/nvidia/device_test.go TestGetNodeDevices_MigProfilesFromNode.
		{name: "nvidia MIG", backend: "NVIDIA",
			in: `[{"id":"GPU-0","count":7,"devmem":40960,"devcore":100,"type":"NVIDIA-A100-SXM4-40GB","numa":0,"health":true,"mode":"mig",` +
				`"migProfiles":[{"name":"1g.5gb","memoryMB":5120,"core":14,"sliceCount":1,"instanceCount":7,"multiprocessorCount":14,"placements":[{"start":6,"size":1}]}]}]`,
			want: []devices.HAMiDevice{{ID: "GPU-0", Count: 7, MemoryMiB: 40960, Cores: 100, Type: "NVIDIA-A100-SXM4-40GB", Mode: "mig", Healthy: true}}},
		// pkg/device/nvidia/device_test.go TestGetNodeDevices_PairScores (no index: the position).
		{name: "nvidia two GPUs", backend: "NVIDIA",
			in: `[{"id":"GPU-0","count":1,"devmem":8192,"devcore":100,"type":"NVIDIA-V100","health":true},{"id":"GPU-1","count":1,"devmem":8192,"devcore":100,"type":"NVIDIA-V100","health":true}]`,
			want: []devices.HAMiDevice{{ID: "GPU-0", Count: 1, MemoryMiB: 8192, Cores: 100, Type: "NVIDIA-V100", Healthy: true},
				{ID: "GPU-1", Index: 1, Count: 1, MemoryMiB: 8192, Cores: 100, Type: "NVIDIA-V100", Healthy: true}}},
		// pkg/device/devices_test.go TestDecodeNodeDevicesLegacyFormat.
		{name: "nvidia legacy, 7 fields", backend: "NVIDIA",
			in:   "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,10,7680,100,NVIDIA-Tesla P4,0,true:",
			want: []devices.HAMiDevice{{ID: "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4", Count: 10, MemoryMiB: 7680, Cores: 100, Type: "NVIDIA-Tesla P4", Mode: "hami-core", Healthy: true}}},
		// pkg/device/devices_test.go Test_DecodeNodeDevices "str is new format".
		{name: "nvidia legacy, 9 fields", backend: "NVIDIA",
			in:   "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:",
			want: []devices.HAMiDevice{{ID: "GPU-ebe7c3f7-303d-558d-435e-99a160631fe4", Index: 1, Count: 10, MemoryMiB: 7680, Cores: 100, Type: "NVIDIA-Tesla P4", Mode: "hami-core", Healthy: true}}},
		// pkg/device/hygon/device_test.go Test_GetNodeDevices "exist dcu device".
		{name: "hygon", backend: "DCU", in: "test-0,1,1024,100,DCU,0,true,0,test:",
			want: []devices.HAMiDevice{{ID: "test-0", Count: 1, MemoryMiB: 1024, Cores: 100, Type: "DCU", Mode: "test", Healthy: true}}},
		// pkg/device/hygon/device_test.go Test_GetNodeDevices "no dcu device" (HAMi decodes no devices).
		{name: "hygon, no devices", backend: "DCU", in: ":", want: []devices.HAMiDevice{}},
		// pkg/device/devices_test.go Test_DecodeNodeDevices "args is multiple delimiters".
		{name: "hygon, only separators", backend: "DCU", in: "::", want: []devices.HAMiDevice{}},
		// pkg/device/iluvatar/device_test.go TestGetNodeDevices.
		{name: "iluvatar", backend: "MR-V100", in: "GPU-bad51c5a-ed4c-591d-91bf-c04a12e19eae,10,8192,100,MR-V100,0,true:",
			want: []devices.HAMiDevice{{ID: "GPU-bad51c5a-ed4c-591d-91bf-c04a12e19eae", Count: 10, MemoryMiB: 8192, Cores: 100, Type: "MR-V100", Mode: "hami-core", Healthy: true}}},
		// pkg/device/iluvatar/device_test.go TestGetNodeDevices (empty list).
		{name: "iluvatar, no devices", backend: "BI-V150", in: "[]", want: []devices.HAMiDevice{}},
		// pkg/device/biren/device_test.go Test_GetNodeDevices (no devcore: HAMi sets 100).
		{name: "biren", backend: "Biren", in: `[{"id":"7-0","count":1,"devmem":32768,"type":"Biren","health":true,"devicepairscore":{}}]`,
			want: []devices.HAMiDevice{{ID: "7-0", Count: 1, MemoryMiB: 32768, Cores: 100, Type: "Biren", Healthy: true}}},
		// pkg/device/vastai/device_test.go Test_GetNodeDevices.
		{name: "vastai", backend: "Vastai", in: `[{"id":"7-0","count":1,"devmem":32768,"type":"Vastai","health":true,"devicepairscore":{}}]`,
			want: []devices.HAMiDevice{{ID: "7-0", Count: 1, MemoryMiB: 32768, Cores: 100, Type: "Vastai", Healthy: true}}},
		// pkg/device/kunlun/vdevice_test.go Test_GetNodeDevices "valid devices get vendor tagged".
		{name: "kunlun vxpu", backend: "XPU", in: `[{"id":"xpu-0","index":0,"count":1,"devmem":98304,"devcore":100,"type":"XPU","health":true}]`,
			want: []devices.HAMiDevice{{ID: "xpu-0", Count: 1, MemoryMiB: 98304, Cores: 100, Type: "XPU", Healthy: true}}},
		// pkg/device/ascend/device_test.go Test_GetNodeDevices (capitalised keys; devcore in AI cores).
		{name: "ascend", backend: "Ascend910A",
			in:   `[{"ID":"GPU-0","Count":4,"Devmem":8738,"Devcore":8,"Type":"huawei.com/Ascend910","Numa":0,"Health":true}]`,
			want: []devices.HAMiDevice{{ID: "GPU-0", Count: 4, MemoryMiB: 8738, Cores: 8, Type: "huawei.com/Ascend910", Healthy: true}}},
		// pkg/device/amd/device_test.go Test_GetNodeDevices.
		{name: "amd", backend: "AMD", in: `[{"id":"GPU-0","index":0,"count":1,"devmem":8192,"devcore":100,"type":"amd","numa":0,"health":true}]`,
			want: []devices.HAMiDevice{{ID: "GPU-0", Count: 1, MemoryMiB: 8192, Cores: 100, Type: "amd", Healthy: true}}},
		// docs/develop/amd-vgpu.md section 4.1 (devcore is the CU count).
		{name: "amd MI300X", backend: "AMD",
			in:   `[{"id":"<device-id>","index":0,"count":1,"devmem":196608,"devcore":304,"type":"AMD Instinct MI300X VF","numa":0,"mode":"hami-core","health":true}]`,
			want: []devices.HAMiDevice{{ID: "<device-id>", Count: 1, MemoryMiB: 196608, Cores: 304, Type: "AMD Instinct MI300X VF", Mode: "hami-core", Healthy: true}}},
		// pkg/device/metax/sdevice_test.go TestGetMetaxSDevices.
		{name: "metax sgpu", backend: "Metax-SGPU",
			in:   `[{"uuid": "GPU-123", "model": "sgpu", "totalDevCount": 16, "totalCompute": 100, "bdf": "0000:44:00.0", "totalVRam" : 32768, "numa": 1, "healthy": true, "qosPolicy": "fixed-share"}]`,
			want: []devices.HAMiDevice{{ID: "GPU-123", Count: 16, MemoryMiB: 32768, Cores: 100, Type: "Metax-SGPU", Numa: 1, Healthy: true}}},
		// pkg/device/metax/sdevice_test.go TestGetMetaxSDevices (empty list).
		{name: "metax sgpu, no cards", backend: "Metax-SGPU", in: "[]", want: []devices.HAMiDevice{}},
		// pkg/device/enflame/device_test.go TestGetNodeDevices_DRSAnnotation.
		{name: "enflame drs", backend: "Enflame", node: "node-a",
			in:   `{"devices":[{"index":"0","minor":"0","capacity":6}],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`,
			want: []devices.HAMiDevice{{ID: "node-a-enflame-drs-0", Count: 6, MemoryMiB: 40960, Cores: 100, Type: "Enflame", Healthy: true}}},
		// The same with a capacity written as a string, which HAMi's parseDRSCapacity reads too.
		{name: "enflame drs, string capacity", backend: "Enflame", node: "n",
			in: `{"devices":[{"index":"3","capacity":"6"},{"index":"1","capacity":2}],"profiles":{"1g.6gb":"0"}}`,
			want: []devices.HAMiDevice{{ID: "n-enflame-drs-3", Index: 3, Count: 6, MemoryMiB: 6144, Cores: 100, Type: "Enflame", Healthy: true},
				{ID: "n-enflame-drs-1", Index: 1, Count: 2, MemoryMiB: 6144, Cores: 100, Type: "Enflame", Healthy: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := backend(t, tt.backend).DecodeNodeRegister(tt.node, tt.in)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestDecodeNodeRegisterGarbled(t *testing.T) {
	tests := []struct {
		name, backend, in, wantErr string
	}{
		// pkg/device/hygon/device_test.go Test_GetNodeDevices "dcu device length less than 7".
		{name: "hygon, 5 fields", backend: "DCU", in: "test-0,1,1024,100,DCU:",
			wantErr: `hami.io/node-dcu-register: device [0] "test-0,1,1024,100,DCU": want 7 comma-separated fields`},
		// pkg/device/hygon/device_test.go Test_GetNodeDevices "node annotations not decode successfully".
		{name: "hygon, empty", backend: "DCU", in: "", wantErr: "hami.io/node-dcu-register: empty value"},
		// pkg/device/devices_test.go Test_DecodeNodeDevices "malformed segment without comma".
		{name: "garbage item", backend: "MR-V50", in: "garbage:", wantErr: `device [0] "garbage": want 7 comma-separated fields`},
		// pkg/device/devices_test.go Test_DecodeNodeDevices "args has comma and delimiter but empty fields".
		{name: "empty fields", backend: "DCU", in: ",:", wantErr: "got 2"},
		// pkg/device/devices_test.go Test_DecodeNodeDevices "invalid count field" .. "invalid index field in new format".
		{name: "bad count", backend: "DCU", in: "G,notanint,7680,100,T,0,true:", wantErr: `field count "notanint" is not an integer`},
		{name: "bad numa", backend: "DCU", in: "G,10,7680,100,T,notanint,true:", wantErr: `field numa "notanint" is not an integer`},
		{name: "bad health", backend: "DCU", in: "G,10,7680,100,T,0,notabool:", wantErr: `field health "notabool" is not a boolean`},
		{name: "bad index", backend: "DCU", in: "G,10,7680,100,T,0,true,notanint,hami-core:", wantErr: `field index "notanint" is not an integer`},
		// pkg/device/devices_test.go Test_DecodeNodeDevices "negative index field in new format".
		{name: "negative index", backend: "DCU", in: "G,10,7680,100,T,0,true,-1,hami-core:", wantErr: "field index must be within 0..2147483647, got -1"},
		{name: "8 fields", backend: "DCU", in: "G,10,7680,100,T,0,true,1:", wantErr: "got 8"},
		// pkg/device/kunlun/vdevice_test.go Test_GetNodeDevices "not-json".
		{name: "kunlun, not JSON", backend: "XPU", in: "not-json", wantErr: `hami.io/node-register-xpu: device [0] "not-json"`},
		{name: "broken JSON", backend: "AMD", in: `[{"id":`, wantErr: "hami.io/node-amd-register: not a JSON array of devices"},
		{name: "JSON trailing data", backend: "AMD", in: `[] []`, wantErr: "trailing data"},
		{name: "JSON string memory", backend: "AMD", in: `[{"id":"a","count":1,"devmem":"8G"}]`, wantErr: "cannot unmarshal string"},
		{name: "JSON fractional memory", backend: "AMD", in: `[{"id":"a","count":1,"devmem":1.5}]`, wantErr: "cannot unmarshal number 1.5"},
		{name: "JSON null device", backend: "Ascend910B3", in: `[null]`, wantErr: "hami.io/node-register-Ascend910B3: device [0]: field id is empty"},
		{name: "no memory", backend: "Ascend310P", in: `[{"id":"a","count":1}]`, wantErr: "field devmem (MiB) must be within 1..2147483647, got 0"},
		{name: "int32 overflow", backend: "NVIDIA", in: `[{"id":"a","count":1,"devmem":2147483648}]`, wantErr: "got 2147483648"},
		{name: "no count", backend: "Biren", in: `[{"id":"a","devmem":1}]`, wantErr: "field count (split count) must be within 1..2147483647, got 0"},
		{name: "negative cores", backend: "NVIDIA", in: "a,1,1,-1,T,0,true:", wantErr: "field devcore must be within 0..2147483647, got -1"},
		{name: "negative JSON index", backend: "NVIDIA", in: `[{"id":"a","index":-2,"count":1,"devmem":1}]`, wantErr: "got -2"},
		{name: "id with separator", backend: "NVIDIA", in: `[{"id":"a;b","count":1,"devmem":1}]`, wantErr: "contains one of ,:;"},
		{name: "id with spaces", backend: "NVIDIA", in: `[{"id":" a","count":1,"devmem":1}]`, wantErr: "leading or trailing spaces"},
		{name: "duplicate id", backend: "DCU", in: "a,1,1,100,T,0,true:a,1,1,100,T,0,true:", wantErr: `device [1]: id "a" already used by device [0]`},
		{name: "metax, not an array", backend: "Metax-SGPU", in: `{"uuid":"a"}`, wantErr: "metax-tech.com/node-gpu-devices: not a JSON array of devices"},
		{name: "metax, null", backend: "Metax-SGPU", in: `null`, wantErr: "not a JSON array"},
		{name: "metax, no memory", backend: "Metax-SGPU", in: `[{"uuid":"a","totalDevCount":1}]`, wantErr: "device [0]: field devmem"},
		{name: "metax, empty", backend: "Metax-SGPU", in: ` `, wantErr: "empty value"},
		{name: "enflame, no profiles", backend: "Enflame", in: `{"devices":[{"index":"0","capacity":6}]}`, wantErr: "enflame.com/gcu-drs-capacity: no DRS profiles"},
		{name: "enflame, bad profile", backend: "Enflame", in: `{"devices":[],"profiles":{"big":"0"}}`, wantErr: `profile "big" is not of the form`},
		{name: "enflame, no capacity", backend: "Enflame", in: `{"devices":[{"index":"0"}],"profiles":{"1g.6gb":"0"}}`, wantErr: "device [0]: field capacity is missing"},
		{name: "enflame, zero capacity", backend: "Enflame", in: `{"devices":[{"capacity":0}],"profiles":{"1g.6gb":"0"}}`, wantErr: "field capacity 0 is not a positive integer"},
		{name: "enflame, bad index", backend: "Enflame", in: `{"devices":[{"index":"x","capacity":1}],"profiles":{"1g.6gb":"0"}}`, wantErr: `field index "x"`},
		{name: "enflame, duplicate index", backend: "Enflame", in: `{"devices":[{"index":"1","capacity":1},{"index":"1","capacity":1}],"profiles":{"1g.6gb":"0"}}`,
			wantErr: `id "n-enflame-drs-1" already used`},
		{name: "enflame, an array", backend: "Enflame", in: `[]`, wantErr: "not a JSON object of devices and profiles"},
		{name: "enflame, trailing data", backend: "Enflame", in: `{"profiles":{"1g.6gb":"0"}} {}`, wantErr: "trailing data"},
		{name: "capacity backend", backend: "MLU", in: "x", wantErr: "backend MLU registers no node annotation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := backend(t, tt.backend).DecodeNodeRegister("n", tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %+v, %v; want error %q", got, err, tt.wantErr)
			}
		})
	}
	if _, err := devices.DecodeEnflameDRSCapacity("", `{"profiles":{"1g.6gb":"0"}}`); err == nil || !strings.Contains(err.Error(), "cannot make device ids") {
		t.Errorf("no node name: %v", err)
	}
}
