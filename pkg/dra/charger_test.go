package dra_test

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestNewChargerRejects(t *testing.T) {
	nv := []effective.Family{effective.Nvidia()}
	good := testClasses()[0]
	with := func(mutate func(c *dra.Class)) []dra.Class {
		c := good
		mutate(&c)
		return []dra.Class{c}
	}
	cases := []struct {
		name    string
		classes []dra.Class
		fams    []effective.Family
		want    string
	}{
		{"unknown family", with(func(c *dra.Class) { c.Family = "amd" }), nv, `unknown family "amd"`},
		{"empty family", with(func(c *dra.Class) { c.Family = "" }), nv, "family must not be empty"},
		{"empty name", with(func(c *dra.Class) { c.Name = "" }), nv, "name must not be empty"},
		{"bad mode", with(func(c *dra.Class) { c.Mode = "Shared" }), nv, `got "Shared"`},
		{"no memory capacity", with(func(c *dra.Class) { c.MemoryCapacity = "" }), nv, "memoryCapacity must not be empty"},
		{"same capacities", with(func(c *dra.Class) { c.CoresCapacity = "memory" }), nv, "both"},
		{"negative cores", with(func(c *dra.Class) { c.CoresPerDevice = -1 }), nv, "coresPerDevice"},
		{"duplicate class", []dra.Class{good, good}, nv, "listed twice"},
		{"bad class selector", with(func(c *dra.Class) { c.Selectors = []string{"device.("} }), nv, `selectors[0] "device.("`},
		{"duplicate family", []dra.Class{good}, append(nv, effective.Nvidia()), "both named"},
		{"unnamed family", []dra.Class{good}, []effective.Family{{}}, "name must not be empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := dra.NewCharger(tc.classes, tc.fams)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewCharger = %v, %v; want an error with %q", c, err, tc.want)
			}
		})
	}
}

func TestClasses(t *testing.T) {
	c := newCharger(t)
	got := c.Classes()
	if len(got) != 3 || got[0].Name != hamiClass || got[2].Name != migClass {
		t.Fatalf("Classes = %v", got)
	}
	got[0].Name = "changed"
	got[1].Selectors[0] = "true"
	if again := c.Classes(); again[0].Name != hamiClass || again[1].Selectors[0] == "true" {
		t.Error("Classes shares the charger's slices")
	}
	empty, err := dra.NewCharger(nil, nil)
	if err != nil || empty.Governs(hamiClaim(1, 1, 1)) {
		t.Errorf("an empty charger: %v", err)
	}
}

func TestGoverns(t *testing.T) {
	c := newCharger(t)
	fa := spec(resourcev1.DeviceRequest{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "a", DeviceClassName: "example.com/x"}, {Name: "b", DeviceClassName: migClass},
	}})
	for name, s := range map[string]*resourcev1.ResourceClaimSpec{
		"exactly":        hamiClaim(1, 1024, 10),
		"second request": spec(exact("x", "example.com/x", 1), exact("gpu", gpuClass, 1)),
		"subrequest":     fa,
	} {
		if !c.Governs(s) {
			t.Errorf("%s: Governs = false", name)
		}
	}
}

func TestInventory(t *testing.T) {
	var nilInv *dra.Inventory
	if nilInv.Len() != 0 || dra.NewInventory(nil).Len() != 0 {
		t.Error("an empty inventory knows devices")
	}
	old := slice("old", nvDriver, "n1", gpuDev("g0", "80Gi"), gpuDev("g1", "80Gi"), gpuDev("g2", "80Gi"))
	cur := slice("cur", nvDriver, "n1", gpuDev("g0", "40Gi"))
	cur.Spec.Pool.Generation = 2
	dup := slice("dup", nvDriver, "n1", gpuDev("g0", "20Gi"))
	dup.Spec.Pool.Generation = 2
	inv := dra.NewInventory([]*resourcev1.ResourceSlice{dup, nil, old, cur})
	// The newest generation only, a device once (the first slice by name).
	if inv.Len() != 1 {
		t.Fatalf("Len = %d, want 1", inv.Len())
	}
	ds, err := newCharger(t).Demands(context.Background(), "claim", spec(all("gpu", gpuClass)), nil, inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ds[0].Effective, (effective.Vector{GPU: 1, MemMiB: 40960, Cores: 100}); got != want {
		t.Errorf("Effective = %v, want %v", got, want)
	}
}

func TestInventorySharedDevices(t *testing.T) {
	yes := true
	network := slice("net", nvDriver, "", gpuDev("g0", "80Gi"))
	network.Spec.NodeName, network.Spec.AllNodes = nil, &yes
	local := slice("n1", nvDriver, "n1", gpuDev("g0", "80Gi"), gpuDev("g1", "80Gi"))
	ds, err := newCharger(t).Demands(context.Background(), "claim", spec(all("gpu", gpuClass)), nil, dra.NewInventory([]*resourcev1.ResourceSlice{network, local}), nil)
	if err != nil {
		t.Fatal(err)
	}
	// A device every node reaches is counted beside each node's own.
	if got := ds[0].Effective.GPU; got != 3 {
		t.Errorf("GPU = %d, want 3", got)
	}
}

// TestConcurrent: one charger and one inventory serve many goroutines.
func TestConcurrent(t *testing.T) {
	c := newCharger(t)
	inv := inventory(slice("n1", nvDriver, "n1", gpuDev("g0", "80Gi"), gpuDev("g1", "40Gi")))
	done := make(chan effective.Vector)
	for range 8 {
		go func() {
			ds, err := c.Demands(context.Background(), "claim", spec(all("gpu", gpuClass)), nil, inv, nil)
			if err != nil || len(ds) != 1 {
				done <- effective.Vector{}
				return
			}
			done <- ds[0].Effective
		}()
	}
	for range 8 {
		if got, want := <-done, (effective.Vector{GPU: 2, MemMiB: 163840, Cores: 200}); got != want {
			t.Errorf("Effective = %v, want %v", got, want)
		}
	}
}
