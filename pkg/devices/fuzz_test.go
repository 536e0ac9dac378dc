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
