package dra_test

import (
	"context"
	"slices"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

type demandCase struct {
	name  string
	spec  *resourcev1.ResourceClaimSpec
	alloc *resourcev1.AllocationResult
	inv   *dra.Inventory
	opts  map[string]effective.Options
	// want is the nvidia demand; containers and unresolved its names.
	want       effective.Vector
	containers []string
	unresolved []string
}

func runDemandCases(t *testing.T, cases []demandCase) {
	t.Helper()
	c := newCharger(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if !c.Governs(tc.spec) {
				t.Fatal("Governs = false, want true")
			}
			ds, err := c.Demands(context.Background(), "claim", tc.spec, tc.alloc, tc.inv, tc.opts)
			if err != nil {
				t.Fatalf("Demands: %v", err)
			}
			if len(ds) != 1 || ds[0].Family != effective.NvidiaName {
				t.Fatalf("Demands = %d demands, want one of nvidia", len(ds))
			}
			d := ds[0]
			if d.Effective != tc.want {
				t.Errorf("Effective = %v, want %v", d.Effective, tc.want)
			}
			var names []string
			for _, ct := range d.Containers {
				names = append(names, ct.Name)
				if ct.Role != effective.RoleApp {
					t.Errorf("container %s: role %s, want app", ct.Name, ct.Role)
				}
			}
			if !slices.Equal(names, tc.containers) {
				t.Errorf("containers = %v, want %v", names, tc.containers)
			}
			if !slices.Equal(d.Unresolved, tc.unresolved) {
				t.Errorf("Unresolved = %v, want %v", d.Unresolved, tc.unresolved)
			}
		})
	}
}

func TestDemandsHAMiDRA(t *testing.T) {
	hamiNode := inventory(slice("n1-hami", hamiDriver, "n1", hamiDev("gpu-0", "80Gi"), hamiDev("gpu-1", "80Gi")))
	runDemandCases(t, []demandCase{
		// HAMi-DRA: memory bytes = gpumem MiB × 1024 × 1024, cores = gpucores.
		{name: "one GPU, memory and cores", spec: hamiClaim(1, 8192, 30), want: effective.Vector{GPU: 1, MemMiB: 8192, Cores: 30}, containers: []string{"gpu"}},
		// HAMi: gpumem without gpucores books defaultCores (0).
		{name: "two GPUs, memory only", spec: hamiClaim(2, 4096, -1), want: effective.Vector{GPU: 2, MemMiB: 8192}, containers: []string{"gpu"}},
		// HAMi: no gpumem books the whole device and, without gpucores, all its cores.
		{name: "count only, device size from opts", spec: hamiClaim(1, -1, -1), opts: nvidiaOpts(81920),
			want: effective.Vector{GPU: 1, MemMiB: 81920, Cores: 100}, containers: []string{"gpu"}},
		// HAMi: the whole device of an unknown size is a share not yet resolved.
		{name: "count only, no device size", spec: hamiClaim(1, -1, -1),
			want: effective.Vector{GPU: 1, Cores: 100}, containers: []string{"gpu"}, unresolved: []string{"gpu"}},
		// HAMi books a share of the card it chose: the published 80Gi device.
		{name: "count only, sized by the slices", spec: hamiClaim(2, -1, -1), inv: hamiNode,
			want: effective.Vector{GPU: 2, MemMiB: 163840, Cores: 200}, containers: []string{"gpu"}},
		// HAMi: an explicit gpucores with no gpumem keeps the whole device, cores as given.
		{name: "count and cores", spec: hamiClaim(1, -1, 50), opts: nvidiaOpts(40960),
			want: effective.Vector{GPU: 1, MemMiB: 40960, Cores: 50}, containers: []string{"gpu"}},
		// HAMi: a zero gpumem is unset, the whole device.
		{name: "zero memory", spec: hamiClaim(1, 0, 10), opts: nvidiaOpts(40960),
			want: effective.Vector{GPU: 1, MemMiB: 40960, Cores: 10}, containers: []string{"gpu"}},
		// HAMi-DRA writes ExactCount; the API defaults a zero count to one device.
		{name: "count defaults to one", spec: hamiClaim(0, 1024, -1), want: effective.Vector{GPU: 1, MemMiB: 1024}, containers: []string{"gpu"}},
	})
}

func TestDemandsBytes(t *testing.T) {
	withMem := func(q string) *resourcev1.ResourceClaimSpec {
		r := exact("gpu", hamiClass, 1)
		r.Exactly.Capacity = capacity("memory", q)
		return spec(r)
	}
	runDemandCases(t, []demandCase{
		// A byte over a MiB is a MiB more (the device holds the bytes).
		{name: "one byte over", spec: withMem("1073741825"), want: effective.Vector{GPU: 1, MemMiB: 1025}, containers: []string{"gpu"}},
		{name: "one byte", spec: withMem("1"), want: effective.Vector{GPU: 1, MemMiB: 1}, containers: []string{"gpu"}},
		{name: "binary suffix", spec: withMem("10Gi"), want: effective.Vector{GPU: 1, MemMiB: 10240}, containers: []string{"gpu"}},
		{name: "decimal suffix", spec: withMem("1G"), want: effective.Vector{GPU: 1, MemMiB: 954}, containers: []string{"gpu"}},
	})
}

func TestDemandsWholeDevices(t *testing.T) {
	a100s := slice("n1-gpu", nvDriver, "n1", gpuDev("gpu-0", "80Gi"), gpuDev("gpu-1", "80Gi"))
	mixed := slice("n2-gpu", nvDriver, "n2", gpuDev("gpu-0", "80Gi"), gpuDev("gpu-1", "40Gi"))
	migs := slice("n3-gpu", nvDriver, "n3", gpuDev("gpu-1", "80Gi"),
		migDev("gpu-0-mig-0", "1g.10gb", "10Gi"), migDev("gpu-0-mig-1", "2g.20gb", "20Gi"))
	runDemandCases(t, []demandCase{
		// HAMi books a whole card as its memory and 100 cores.
		{name: "gpu.nvidia.com, two 80Gi devices", spec: spec(exact("gpu", gpuClass, 2)), inv: inventory(a100s),
			want: effective.Vector{GPU: 2, MemMiB: 163840, Cores: 200}, containers: []string{"gpu"}},
		// The worst case before allocation: the largest eligible device.
		{name: "gpu.nvidia.com, mixed sizes", spec: spec(exact("gpu", gpuClass, 1)), inv: inventory(mixed),
			want: effective.Vector{GPU: 1, MemMiB: 81920, Cores: 100}, containers: []string{"gpu"}},
		// Allocated: the device the scheduler picked.
		{name: "allocated to the smaller device", spec: spec(exact("gpu", gpuClass, 1)), inv: inventory(mixed),
			alloc: allocated("gpu", nvDriver, "n2", "gpu-1"), want: effective.Vector{GPU: 1, MemMiB: 40960, Cores: 100}, containers: []string{"gpu"}},
		// An allocated device the slices do not know: the eligible worst case.
		{name: "allocated to an unknown device", spec: spec(exact("gpu", gpuClass, 1)), inv: inventory(mixed),
			alloc: allocated("gpu", nvDriver, "n9", "gpu-7"), want: effective.Vector{GPU: 1, MemMiB: 81920, Cores: 100}, containers: []string{"gpu"}},
		// HAMi: a whole device of the family's size, exclusive cores.
		{name: "gpu.nvidia.com, no slices", spec: spec(exact("gpu", gpuClass, 2)), opts: nvidiaOpts(81920),
			want: effective.Vector{GPU: 2, MemMiB: 163840, Cores: 200}, containers: []string{"gpu"}},
		{name: "gpu.nvidia.com, no slices nor size", spec: spec(exact("gpu", gpuClass, 1)),
			want: effective.Vector{GPU: 1, Cores: 100}, containers: []string{"gpu"}, unresolved: []string{"gpu"}},
		// A MIG device is its profile's memory and no cores of its own.
		{name: "mig.nvidia.com by profile", spec: spec(exact("mig", migClass, 1, `device.attributes["gpu.nvidia.com"].profile == "1g.10gb"`)),
			inv: inventory(migs), want: effective.Vector{GPU: 1, MemMiB: 10240}, containers: []string{"mig"}},
		// The class's own selector keeps the whole GPU beside them out.
		{name: "mig.nvidia.com, any profile", spec: spec(exact("mig", migClass, 1)),
			inv: inventory(migs), want: effective.Vector{GPU: 1, MemMiB: 20480}, containers: []string{"mig"}},
		{name: "gpu.nvidia.com beside MIG devices", spec: spec(all("gpu", gpuClass)),
			inv: inventory(migs), want: effective.Vector{GPU: 1, MemMiB: 81920, Cores: 100}, containers: []string{"gpu"}},
		// A selector failing at run time (no such attribute) keeps the device: the worst case.
		{name: "runtime error keeps the device", spec: spec(exact("gpu", gpuClass, 1, `device.attributes["gpu.nvidia.com"].nosuch == "x"`)),
			inv: inventory(mixed), want: effective.Vector{GPU: 1, MemMiB: 81920, Cores: 100}, containers: []string{"gpu"}},
	})
}

func TestDemandsAll(t *testing.T) {
	four := slice("n1-gpu", nvDriver, "n1", dev("g0", "80Gi", "type", "gpu", "model", "big"), dev("g1", "80Gi", "type", "gpu", "model", "big"),
		dev("g2", "40Gi", "type", "gpu", "model", "small"), dev("g3", "40Gi", "type", "gpu", "model", "small"))
	twoNodes := inventory(slice("a", nvDriver, "a", gpuDev("g0", "80Gi"), gpuDev("g1", "80Gi")),
		slice("b", nvDriver, "b", gpuDev("g0", "80Gi"), gpuDev("g1", "80Gi")))
	runDemandCases(t, []demandCase{
		// All takes every eligible device of the node.
		{name: "four eligible devices", spec: spec(all("gpu", gpuClass)), inv: inventory(four),
			want: effective.Vector{GPU: 4, MemMiB: 4 * 81920, Cores: 400}, containers: []string{"gpu"}},
		{name: "a selector narrows to two", spec: spec(all("gpu", gpuClass, `device.attributes["gpu.nvidia.com"].model == "small"`)), inv: inventory(four),
			want: effective.Vector{GPU: 2, MemMiB: 2 * 40960, Cores: 200}, containers: []string{"gpu"}},
		// One allocation is on one node: two nodes of two devices take two.
		{name: "devices on two nodes", spec: spec(all("gpu", gpuClass)), inv: twoNodes,
			want: effective.Vector{GPU: 2, MemMiB: 2 * 81920, Cores: 200}, containers: []string{"gpu"}},
		// Allocated: the devices it holds.
		{name: "allocated", spec: spec(all("gpu", gpuClass)), inv: inventory(four), alloc: allocated("gpu", nvDriver, "n1", "g2"),
			want: effective.Vector{GPU: 1, MemMiB: 40960, Cores: 100}, containers: []string{"gpu"}},
	})
}

func TestDemandsFirstAvailable(t *testing.T) {
	sub := func(name string, count int64, mem string) resourcev1.DeviceSubRequest {
		return resourcev1.DeviceSubRequest{Name: name, DeviceClassName: hamiClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
			Count: count, Capacity: capacity("memory", mem)}
	}
	fa := spec(resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
		sub("big", 1, "40Gi"), sub("small", 2, "10Gi"),
		{Name: "other", DeviceClassName: "example.com/not-governed", Count: 8},
	}})
	runDemandCases(t, []demandCase{
		// The worst the scheduler can pick, per dimension.
		{name: "worst case", spec: fa, want: effective.Vector{GPU: 2, MemMiB: 40960}, containers: []string{"gpu/big", "gpu/small"}},
		// Allocated: what it picked.
		{name: "allocated", spec: fa, alloc: allocated("gpu/small", hamiDriver, "n1", "gpu-0", "gpu-1"),
			want: effective.Vector{GPU: 2, MemMiB: 20480}, containers: []string{"gpu/small"}},
	})
	ds, err := newCharger(t).Demands(context.Background(), "claim", fa, allocated("gpu/other", "example.com", "n1", "x"), nil, nil)
	if err != nil || len(ds) != 0 {
		t.Errorf("allocated to an ungoverned subrequest: %v, %v; want nothing", ds, err)
	}
}

func TestDemandsConsumed(t *testing.T) {
	a := allocated("gpu", hamiDriver, "n1", "gpu-0")
	a.Devices.Results[0].ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{
		"memory": resource.MustParse("8Gi"), "cores": resource.MustParse("40"),
	}
	inv := inventory(slice("n1", hamiDriver, "n1", hamiDev("gpu-0", "80Gi")))
	runDemandCases(t, []demandCase{
		// The device holds what the scheduler rounded the request up to.
		{name: "consumed more", spec: hamiClaim(1, 5000, 30), alloc: a, inv: inv,
			want: effective.Vector{GPU: 1, MemMiB: 8192, Cores: 40}, containers: []string{"gpu"}},
		{name: "consumed less", spec: hamiClaim(1, 10240, 50), alloc: a, inv: inv,
			want: effective.Vector{GPU: 1, MemMiB: 10240, Cores: 50}, containers: []string{"gpu"}},
		// Cores not asked but consumed: the device holds them.
		{name: "cores consumed, not asked", spec: hamiClaim(1, 5000, -1), alloc: a, inv: inv,
			want: effective.Vector{GPU: 1, MemMiB: 8192, Cores: 40}, containers: []string{"gpu"}},
		// No memory asked: the whole allocated device (80Gi), not the family's size.
		{name: "whole allocated device", spec: hamiClaim(1, -1, -1), alloc: allocated("gpu", hamiDriver, "n1", "gpu-0"), inv: inv,
			opts: nvidiaOpts(40960), want: effective.Vector{GPU: 1, MemMiB: 81920, Cores: 100}, containers: []string{"gpu"}},
	})
}

func TestDemandsSumsRequests(t *testing.T) {
	s := spec(hamiRequest(1, 1024, 10), exact("whole", gpuClass, 1), exact("other", "example.com/not-governed", 4))
	s.Devices.Requests[0].Name = "shared"
	runDemandCases(t, []demandCase{
		{name: "two requests", spec: s, opts: nvidiaOpts(81920),
			want: effective.Vector{GPU: 2, MemMiB: 1024 + 81920, Cores: 110}, containers: []string{"shared", "whole"}},
	})
}

func TestDemandsFamilies(t *testing.T) {
	other := effective.Nvidia()
	other.Name, other.Section = "other", "other"
	other.Names = effective.ResourceNames{Count: "other.com/gpu", Memory: "other.com/mem", MemoryPercentage: "other.com/pct", Cores: "other.com/cores"}
	other.MemoryFactor = 1024 // the family's memory resource is GiB
	classes := append(testClasses(), dra.Class{Name: "other.com", Family: "other", Mode: dra.ModeCapacity, MemoryCapacity: "memory"})
	c, err := dra.NewCharger(classes, []effective.Family{effective.Nvidia(), other})
	if err != nil {
		t.Fatal(err)
	}
	o := exact("o", "other.com", 1)
	o.Exactly.Capacity = capacity("memory", "1536Mi")
	ds, err := c.Demands(context.Background(), "claim", spec(o, hamiRequest(1, 1024, 0)), nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Family != effective.NvidiaName || ds[1].Family != "other" {
		t.Fatalf("families = %v, want nvidia then other", ds)
	}
	// 1536 MiB is 2 GiB in the family's units, rounded up.
	if got, want := ds[1].Effective, (effective.Vector{GPU: 1, MemMiB: 2048}); got != want {
		t.Errorf("other = %v, want %v", got, want)
	}
	if got := ds.Effective(); got.Of(effective.NvidiaName) != (effective.Vector{GPU: 1, MemMiB: 1024}) {
		t.Errorf("nvidia = %v", got)
	}
}

func TestDemandsUngoverned(t *testing.T) {
	c := newCharger(t)
	for name, s := range map[string]*resourcev1.ResourceClaimSpec{
		"nil spec":         nil,
		"no request":       spec(),
		"other class":      spec(exact("gpu", "example.com/gpu", 1)),
		"nil exactly":      spec(resourcev1.DeviceRequest{Name: "gpu"}),
		"other subrequest": spec(resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "x"}}}),
	} {
		if c.Governs(s) {
			t.Errorf("%s: Governs = true", name)
		}
		ds, err := c.Demands(context.Background(), "claim", s, nil, nil, nil)
		if err != nil || len(ds) != 0 {
			t.Errorf("%s: Demands = %v, %v; want none", name, ds, err)
		}
	}
	var nilCharger *dra.Charger
	if nilCharger.Governs(hamiClaim(1, 1, 1)) || nilCharger.Classes() != nil {
		t.Error("a nil charger governs nothing")
	}
	if ds, err := nilCharger.Demands(context.Background(), "c", hamiClaim(1, 1, 1), nil, nil, nil); ds != nil || err != nil {
		t.Error("a nil charger charges nothing")
	}
}
