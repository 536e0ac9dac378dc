package effective_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// BenchmarkCompute5Containers: a sidecar, two inits and two apps.
func BenchmarkCompute5Containers(b *testing.B) {
	pod := testpod.New("p").Sidecar("proxy", gpu(1), mem(1024)).
		Init("download", testpod.CPU("1")).Init("convert", gpu(1), mem(20480), cores(50)).
		App("server", gpu(1), mem(10240), cores(30)).App("tokenizer", gpu(1), pct(10)).Build()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := effective.Compute(pod, defset, effective.Options{DeviceMemoryMiB: 24576}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTarget5Containers: lifecycle target with a per-device collapse.
func BenchmarkTarget5Containers(b *testing.B) {
	pod := testpod.New("p").Sidecar("proxy", gpu(1), mem(1024)).
		Init("download", testpod.CPU("1")).Init("convert", gpu(1), mem(20480), cores(50)).
		App("server", gpu(1), mem(10240), cores(30)).App("tokenizer", gpu(1), mem(2048)).
		InitRunning("proxy").InitTerminated("download", 0).InitRunning("convert").Build()
	assign := effective.Assignment{"proxy": {{UUID: "GPU-a", MemMiB: 1024}}, "convert": {{UUID: "GPU-a", MemMiB: 20480, Cores: 50}},
		"server": {{UUID: "GPU-a", MemMiB: 10240, Cores: 30}}, "tokenizer": {{UUID: "GPU-b", MemMiB: 2048}}}
	d, err := effective.Compute(pod, defset, effective.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := effective.TargetOf(pod, effective.Demands{d}, assign); err != nil {
			b.Fatal(err)
		}
	}
}
