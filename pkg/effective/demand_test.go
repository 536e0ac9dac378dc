package effective_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

var (
	gpu    = testpod.GPU
	mem    = testpod.Mem
	pct    = testpod.MemPct
	cores  = testpod.Cores
	defset = effective.Nvidia()
)

func vec(g, m, c int64) effective.Vector { return effective.Vector{GPU: g, MemMiB: m, Cores: c} }

func TestCompute(t *testing.T) {
	factor2 := defset
	factor2.MemoryFactor = 2
	defaults := defset
	defaults.DefaultMemory, defaults.DefaultCores, defaults.DefaultGPUNum = 4096, 20, 2
	noExclusive := defaults
	noExclusive.ExclusiveCores = false
	custom := defset
	custom.Names = effective.ResourceNames{Count: "example.com/vgpu", Memory: "example.com/vmem",
		MemoryPercentage: "example.com/vmem-pct", Cores: "example.com/vcores"}

	tests := []struct {
		name  string
		pod   *testpod.Builder
		set   effective.Family
		opt   effective.Options
		want  effective.Vector
		roles []effective.Role
		unres []string
	}{
		{name: "seed 1: init 30 GiB + app 4 GiB -> 30 GiB",
			pod:  testpod.New("p").Init("convert-weights", gpu(1), mem(30720)).App("server", gpu(1), mem(4096)),
			want: vec(1, 30720, 0), roles: []effective.Role{"init", "app"}},
		{name: "seed 2: init 20 GiB + app 10 GiB -> 20 GiB",
			pod:  testpod.New("p").Init("convert-weights", gpu(1), mem(20480)).App("server", gpu(1), mem(10240)),
			want: vec(1, 20480, 0)},
		{name: "two inits 800 + app 500 -> 800",
			pod:  testpod.New("p").Init("a", gpu(1), mem(800)).Init("b", gpu(1), mem(300)).App("c", gpu(1), mem(500)),
			want: vec(1, 800, 0)},
		{name: "2 GPUs x 2000 -> 4000 (association)",
			pod:  testpod.New("p").App("c", gpu(2), mem(2000), cores(30)),
			want: vec(2, 4000, 60)},
		{name: "apps sum, larger than init",
			pod:  testpod.New("p").Init("i", gpu(1), mem(1000)).App("a", gpu(1), mem(800)).App("b", gpu(1), mem(700)),
			want: vec(2, 1500, 0)},
		{name: "dimensions take their max independently",
			pod:  testpod.New("p").Init("i", gpu(1), mem(100), cores(90)).App("a", gpu(2), mem(1000), cores(10)),
			want: vec(2, 2000, 90)},
		{name: "sidecar before init: init runs beside it",
			pod:  testpod.New("p").Sidecar("proxy", gpu(1), mem(2048)).Init("prep", gpu(1), mem(12288)).App("app", gpu(1), mem(8192)),
			want: vec(2, 14336, 0), roles: []effective.Role{"sidecar", "init", "app"}},
		{name: "sidecar after init: init runs alone",
			pod:  testpod.New("p").Init("prep", gpu(1), mem(12288)).Sidecar("proxy", gpu(1), mem(2048)).App("app", gpu(1), mem(8192)),
			want: vec(2, 12288, 0), roles: []effective.Role{"init", "sidecar", "app"}},
		{name: "sidecar after init: steady wins when larger",
			pod:  testpod.New("p").Init("prep", gpu(1), mem(9000)).Sidecar("proxy", gpu(1), mem(2048)).App("app", gpu(1), mem(8192)),
			want: vec(2, 10240, 0)},
		{name: "memory factor 2 applied once",
			pod: testpod.New("p").Init("i", gpu(1), mem(1000)).App("a", gpu(2), mem(300)),
			set: factor2, want: vec(2, 2000, 0)},
		{name: "memory factor 2 applied once to the association",
			pod: testpod.New("p").App("a", gpu(2), mem(1000)),
			set: factor2, want: vec(2, 4000, 0)},
		{name: "defaults: count from defaultGPUNum, memory from defaultMemory, cores from defaultCores",
			pod: testpod.New("p").App("a", cores(50)).App("b", gpu(1)),
			set: noExclusive, want: vec(3, 3*4096, 2*50+20)},
		{name: "defaults with exclusive cores: a bare count gets 100 cores even with defaultMemory (as HAMi)",
			pod: testpod.New("p").App("a", cores(50)).App("b", gpu(1)),
			set: defaults, want: vec(3, 3*4096, 2*50+100)},
		{name: "default count when only memory is set",
			pod:  testpod.New("p").App("a", mem(1000)),
			want: vec(1, 1000, 0)},
		{name: "custom resource names",
			pod: testpod.New("p").App("a", testpod.Res("example.com/vgpu", "2"), testpod.Res("example.com/vmem", "512"),
				gpu(7), mem(99999)),
			set: custom, want: vec(2, 1024, 0)},
		{name: "GPU-less init before two GPU apps: roles by name, not position",
			pod:  testpod.New("p").Init("setup", testpod.CPU("1")).App("a", gpu(1), mem(1000)).App("b", gpu(1), mem(2000)),
			want: vec(2, 3000, 0), roles: []effective.Role{"init", "app", "app"}},
		{name: "requests are read when limits are absent",
			pod:  testpod.New("p").App("a", testpod.Request(gpu(1), mem(700))),
			want: vec(1, 700, 0)},
		{name: "limits win over requests, per resource",
			pod:  testpod.New("p").App("a", testpod.Request(gpu(3), mem(700)), mem(900)),
			want: vec(3, 2700, 0)},
		{name: "percentage unresolved without a device size",
			pod:  testpod.New("p").App("a", gpu(1), pct(50)).App("b", gpu(1), mem(100)),
			want: vec(2, 100, 0), unres: []string{"a"}},
		{name: "percentage resolved against the device memory",
			pod: testpod.New("p").App("a", gpu(2), pct(50)),
			opt: effective.Options{DeviceMemoryMiB: 24576}, want: vec(2, 24576, 0)},
		{name: "no memory and defaultMemory 0 means the whole device, exclusively",
			pod: testpod.New("p").App("a", gpu(1)),
			opt: effective.Options{DeviceMemoryMiB: 24576}, want: vec(1, 24576, 100)},
		{name: "gpumem wins over percentage",
			pod:  testpod.New("p").App("a", gpu(1), mem(100), pct(50)),
			want: vec(1, 100, 0)},
		{name: "count 0 demands nothing",
			pod:  testpod.New("p").App("a", gpu(0), mem(100)),
			want: vec(0, 0, 0)},
		{name: "non-GPU pod", pod: testpod.New("p").App("a", testpod.CPU("2")), want: vec(0, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := tt.set
			if set.Names.Count == "" {
				set = defset
			}
			d, err := effective.Compute(tt.pod.Build(), set, tt.opt)
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			if d.Effective != tt.want {
				t.Errorf("effective = %v, want %v", d.Effective, tt.want)
			}
			if tt.roles != nil {
				for i, r := range tt.roles {
					if d.Containers[i].Role != r {
						t.Errorf("container %d (%s) role = %s, want %s", i, d.Containers[i].Name, d.Containers[i].Role, r)
					}
				}
			}
			if strings.Join(d.Unresolved, ",") != strings.Join(tt.unres, ",") {
				t.Errorf("unresolved = %v, want %v", d.Unresolved, tt.unres)
			}
		})
	}
}

func TestComputeNonGPUPodIsNotAGPUPod(t *testing.T) {
	d, err := effective.Compute(testpod.New("p").Init("i", testpod.CPU("1")).App("a", testpod.CPU("2")).Build(), defset, effective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.GPU() {
		t.Error("GPU() = true for a pod without managed resources")
	}
	d, err = effective.Compute(testpod.New("p").App("a", gpu(0)).Build(), defset, effective.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !d.GPU() {
		t.Error("GPU() = false for a pod naming nvidia.com/gpu")
	}
}

func TestComputeInvalid(t *testing.T) {
	huge := *resource.NewQuantity(1<<62, resource.DecimalSI)
	factor := defset
	factor.MemoryFactor = 1 << 40
	tests := []struct {
		name string
		pod  *testpod.Builder
		set  effective.Family
		want []string // substrings of the message, one per expected field error
	}{
		{name: "non-integer memory", pod: testpod.New("p").App("app", gpu(1), testpod.Res(testpod.MemName, "1500m")),
			want: []string{`container "app": nvidia.com/gpumem "1500m": must be a whole number`}},
		{name: "fractional count", pod: testpod.New("p").App("app", testpod.Res(testpod.GPUName, "0.5")),
			want: []string{`container "app": nvidia.com/gpu "500m": must be a whole number`}},
		{name: "negative cores", pod: testpod.New("p").App("app", gpu(1), testpod.Res(testpod.CoresName, "-5")),
			want: []string{`container "app": nvidia.com/gpucores "-5": must not be negative`}},
		{name: "percentage over 100", pod: testpod.New("p").Init("init", gpu(1), pct(101)).App("app"),
			want: []string{`container "init": nvidia.com/gpumem-percentage "101": must be within 0..100`}},
		{name: "cores over 100", pod: testpod.New("p").App("app", gpu(1), cores(150)),
			want: []string{`container "app": nvidia.com/gpucores "150": must be within 0..100`}},
		{name: "beyond int64", pod: testpod.New("p").App("app", gpu(1), testpod.Res(testpod.MemName, "100E")),
			want: []string{`container "app": nvidia.com/gpumem "100E": does not fit in a 64-bit integer`}},
		{name: "association overflows int64", pod: testpod.New("p").App("app", gpu(4), testpod.ResRaw(testpod.MemName, huge)),
			want: []string{`container "app": nvidia.com/gpumem "4611686018427387904": MiB per device times 4 devices does not fit`}},
		{name: "memory factor overflows int64", pod: testpod.New("p").App("app", gpu(1), mem(1<<30)), set: factor,
			want: []string{`container "app": nvidia.com/gpumem "1073741824": times memoryFactor 1099511627776 does not fit`}},
		{name: "sum over containers overflows", pod: testpod.New("p").App("a", gpu(1), testpod.ResRaw(testpod.MemName, huge)).
			App("b", gpu(1), testpod.ResRaw(testpod.MemName, huge)),
			want: []string{"the sum of the containers' GPU requests does not fit in a 64-bit integer"}},
		{name: "every error is listed", pod: testpod.New("p").Init("i", testpod.Res(testpod.GPUName, "1.5")).App("a", cores(101)),
			want: []string{`container "i": nvidia.com/gpu "1500m"`, `container "a": nvidia.com/gpucores "101"`}},
		{name: "duplicate container names", pod: testpod.New("p").Init("x", gpu(1)).App("x", gpu(1)),
			want: []string{`container "x": name: container name is used twice`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := tt.set
			if set.Names.Count == "" {
				set = defset
			}
			d, err := effective.Compute(tt.pod.Build(), set, effective.Options{})
			if err == nil {
				t.Fatalf("Compute = %+v, want an error", d.Effective)
			}
			var inv *effective.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error %T %v is not an *InvalidError", err, err)
			}
			if len(inv.Errors) != len(tt.want) {
				t.Errorf("got %d field errors (%v), want %d", len(inv.Errors), err, len(tt.want))
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestFamilyValidate(t *testing.T) {
	mod := func(f func(*effective.Family)) effective.Family { s := defset; f(&s); return s }
	tests := []struct {
		set  effective.Family
		want string
	}{
		{defset, ""},
		{mod(func(s *effective.Family) { s.Names.Memory = "" }), "nvidia.resourceMemoryName: must not be empty"},
		{mod(func(s *effective.Family) { s.Names.Cores = s.Names.Count }), "nvidia.resourceCoreName: \"nvidia.com/gpu\" is already used by nvidia.resourceCountName"},
		{mod(func(s *effective.Family) { s.DefaultMemory = -1 }), "nvidia.defaultMemory"},
		{mod(func(s *effective.Family) { s.DefaultCores = 101 }), "nvidia.defaultCores"},
		{mod(func(s *effective.Family) { s.DefaultGPUNum = -1 }), "nvidia.defaultGPUNum"},
		{mod(func(s *effective.Family) { s.MemoryFactor = -2 }), "nvidia.memoryFactor"},
	}
	for _, tt := range tests {
		err := tt.set.Validate()
		if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
	}
}

func TestManaged(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{testpod.GPUName: true, testpod.MemName: true,
		testpod.MemPctName: true, testpod.CoresName: true, corev1.ResourceCPU: false, "nvidia.com/mig-1g.5gb": false} {
		if got := defset.Managed(name); got != want {
			t.Errorf("Managed(%s) = %v, want %v", name, got, want)
		}
	}
}
