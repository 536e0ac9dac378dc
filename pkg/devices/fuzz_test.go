package devices_test

import (
	"reflect"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// The decoders never panic; whatever they accept re-encodes and decodes to
// the same value.

func FuzzDecodeNodeDevices(f *testing.F) {
	for _, s := range []string{`[{"uuid":"GPU-a","index":0,"model":"NVIDIA H200","memoryMiB":143771,"cores":100,"smCount":132,"migEnabled":false,"healthy":true}]`,
		`[]`, `[{"uuid":"GPU-a","memoryMiB":1},{"uuid":"GPU-b","memoryMiB":2,"parentUUID":"GPU-a"}]`, `[{"uuid":"x"}]`, `{}`, `[null]`, `[`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		devs, err := devices.DecodeNodeDevices(s)
		if err != nil {
			return
		}
		enc, err := devices.EncodeNodeDevices(devs)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode %+v: %v", s, devs, err)
		}
		back, err := devices.DecodeNodeDevices(enc)
		if err != nil || !reflect.DeepEqual(back, devs) {
			t.Fatalf("round trip of %q: %+v, %v", enc, back, err)
		}
	})
}

func FuzzDecodeHAMiNodeRegister(f *testing.F) {
	for _, s := range []string{"GPU-0055,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:",
		`[{"id":"GPU-0055","count":10,"devmem":32768,"devcore":100,"type":"V100","numa":0,"health":true}]`,
		"a,b,c", ":::", `[{"id":""}]`, "GPU-a,1,-1,100,T,0,true"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		devs, err := devices.DecodeHAMiNodeRegister(s)
		if err != nil {
			return
		}
		for _, d := range devs {
			if d.MemoryMiB < 0 || d.Cores < 0 || d.Cores > 100 || d.UUID == "" {
				t.Fatalf("accepted invalid device %+v from %q", d, s)
			}
		}
	})
}

func FuzzDecodePodAllocation(f *testing.F) {
	for _, s := range []string{"GPU-a,NVIDIA,20480,10:;GPU-a,NVIDIA,10240,5:;", ";;", ";GPU-a,NVIDIA,1,0:GPU-b,NVIDIA,2,0:;",
		"GPU-a,NVIDIA,1", ",,,:", "GPU-a,NVIDIA,99999999999999999999,0:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ctrs, err := devices.DecodePodAllocation(s)
		if err != nil {
			return
		}
		for _, devs := range ctrs {
			for _, d := range devs {
				if d.UsedMem < 0 || d.UsedCores < 0 || d.UUID == "" {
					t.Fatalf("accepted invalid device %+v from %q", d, s)
				}
			}
		}
		enc, err := devices.EncodePodAllocation(ctrs)
		if err != nil {
			return // types or UUIDs with separators cannot come from a decode; tolerate encoder refusal
		}
		back, err := devices.DecodePodAllocation(enc)
		if err != nil || len(back) != len(ctrs) {
			t.Fatalf("round trip of %q -> %q: %d containers, %v (want %d)", s, enc, len(back), err, len(ctrs))
		}
	})
}

// Every backend's node decoder: what it accepts is valid, carries the
// backend's fixed cores, and (for HAMi's generic encodings) re-encodes.
func FuzzDecodeNodeRegister(f *testing.F) {
	for _, s := range []string{
		`[{"id":"GPU-0","count":5,"devmem":8192,"devcore":100,"type":"NVIDIA-Tesla P4","numa":0,"health":true,"index":0}]`,
		`[{"ID":"GPU-0","Count":4,"Devmem":8738,"Devcore":8,"Type":"huawei.com/Ascend910","Numa":0,"Health":true}]`,
		`[{"id":"7-0","count":1,"devmem":32768,"type":"Biren","health":true,"devicepairscore":{}}]`,
		"test-0,1,1024,100,DCU,0,true,0,test:", "GPU-b,10,8192,100,MR-V100,0,true:", ":", "::", ",:", "garbage:",
		`[{"uuid":"GPU-123","totalDevCount":16,"totalCompute":100,"totalVRam":32768,"numa":1,"healthy":true}]`,
		`{"devices":[{"index":"0","minor":"0","capacity":6}],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}`,
		`{"devices":[{"capacity":"6"},{"index":"1","capacity":1e3}],"profiles":{"7g.2097151gb":""}}`,
		`[null]`, `null`, `[] []`, `{"devices":null}`, "a,1,1,1,T,0,true,2147483648,m", "\xac,1,1,0,,0,0",
	} {
		f.Add(s)
	}
	all := devices.HAMiAnnotations()
	f.Fuzz(func(t *testing.T, s string) {
		for _, b := range all {
			if b.NodeEncoding == devices.EncodingCapacity {
				continue
			}
			devs, err := b.DecodeNodeRegister("node-1", s)
			if err != nil {
				continue
			}
			checkRegistered(t, b, s, devs)
		}
	})
}

func checkRegistered(t *testing.T, b devices.BackendAnnotations, s string, devs []devices.HAMiDevice) {
	t.Helper()
	seen := map[string]bool{}
	for _, d := range devs {
		if err := d.Validate(); err != nil || seen[d.ID] || (b.FixedCores > 0 && d.Cores != b.FixedCores) {
			t.Fatalf("%s accepted invalid device %+v from %q: %v", b.Backend, d, s, err)
		}
		seen[d.ID] = true
	}
	enc, err := devices.EncodeHAMiRegister(devs)
	if err != nil {
		t.Fatalf("%s decoded %q but cannot encode %+v: %v", b.Backend, s, devs, err)
	}
	back, err := devices.DecodeHAMiRegister("k", enc)
	if err != nil || !reflect.DeepEqual(back, devs) {
		t.Fatalf("%s: round trip of %q: %+v, %v; want %+v", b.Backend, enc, back, err, devs)
	}
}
