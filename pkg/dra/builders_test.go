package dra_test

import (
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

const (
	hamiClass  = "hami-core-gpu.project-hami.io"
	hamiDriver = "hami-core-gpu.project-hami.io"
	gpuClass   = "gpu.nvidia.com"
	migClass   = "mig.nvidia.com"
	nvDriver   = "gpu.nvidia.com"
	// hamiSelector is the selector HAMi-DRA's webhook writes on every request.
	hamiSelector = `device.attributes["hami-core-gpu.project-hami.io"].type == "hami-gpu"`
	gib          = int64(1) << 30
)

// testClasses are the classes of the tests: HAMi-DRA's shared GPUs and
// NVIDIA's whole GPUs and MIG devices (one driver publishes both; the
// DeviceClasses tell them apart by type), all charged to the nvidia family.
func testClasses() []dra.Class {
	return []dra.Class{
		{Name: hamiClass, Family: effective.NvidiaName, Mode: dra.ModeCapacity, Driver: hamiDriver, MemoryCapacity: "memory", CoresCapacity: "cores"},
		{Name: gpuClass, Family: effective.NvidiaName, Mode: dra.ModeDevice, Driver: nvDriver, MemoryCapacity: "memory", CoresPerDevice: 100,
			Selectors: []string{`device.attributes["gpu.nvidia.com"].type == "gpu"`}},
		{Name: migClass, Family: effective.NvidiaName, Mode: dra.ModeDevice, Driver: nvDriver, MemoryCapacity: "memory",
			Selectors: []string{`device.attributes["gpu.nvidia.com"].type == "mig"`}},
	}
}

func newCharger(t testing.TB) *dra.Charger {
	t.Helper()
	c, err := dra.NewCharger(testClasses(), []effective.Family{effective.Nvidia()})
	if err != nil {
		t.Fatalf("NewCharger: %v", err)
	}
	return c
}

func spec(reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaimSpec {
	return &resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}}
}

func sel(expr string) resourcev1.DeviceSelector {
	return resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}}
}

// exact is an ExactCount request of count devices of class.
func exact(name, class string, count int64, selectors ...string) resourcev1.DeviceRequest {
	e := &resourcev1.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
	for _, s := range selectors {
		e.Selectors = append(e.Selectors, sel(s))
	}
	return resourcev1.DeviceRequest{Name: name, Exactly: e}
}

// all is an All request of class.
func all(name, class string, selectors ...string) resourcev1.DeviceRequest {
	r := exact(name, class, 0, selectors...)
	r.Exactly.AllocationMode = resourcev1.DeviceAllocationModeAll
	return r
}

// capacity returns the capacity requests of name/value pairs.
func capacity(kv ...string) *resourcev1.CapacityRequirements {
	c := &resourcev1.CapacityRequirements{Requests: map[resourcev1.QualifiedName]resource.Quantity{}}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Requests[resourcev1.QualifiedName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return c
}

// hamiRequest is the request HAMi-DRA's webhook builds from a container's
// nvidia.com/gpu: count, nvidia.com/gpumem: memMiB and nvidia.com/gpucores:
// cores (a negative value: the container does not set it).
func hamiRequest(count, memMiB, cores int64) resourcev1.DeviceRequest {
	r := exact("gpu", hamiClass, count, hamiSelector)
	r.Exactly.Capacity = capacity()
	if memMiB >= 0 {
		r.Exactly.Capacity.Requests["memory"] = resource.MustParse(strconv.FormatInt(memMiB*1024*1024, 10))
	}
	if cores >= 0 {
		r.Exactly.Capacity.Requests["cores"] = *resource.NewQuantity(cores, resource.DecimalSI)
	}
	return r
}

func hamiClaim(count, memMiB, cores int64) *resourcev1.ResourceClaimSpec {
	return spec(hamiRequest(count, memMiB, cores))
}

func strAttr(v string) resourcev1.DeviceAttribute { return resourcev1.DeviceAttribute{StringValue: &v} }

// dev is a device with string attributes (name, value pairs) and a memory
// capacity (a quantity; "" for none).
func dev(name, memory string, attrs ...string) resourcev1.Device {
	d := resourcev1.Device{Name: name, Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}}
	for i := 0; i+1 < len(attrs); i += 2 {
		d.Attributes[resourcev1.QualifiedName(attrs[i])] = strAttr(attrs[i+1])
	}
	if memory != "" {
		d.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(memory)}}
	}
	return d
}

// hamiDev is a device as HAMi-DRA's driver publishes it.
func hamiDev(name, memory string) resourcev1.Device {
	d := dev(name, memory, "type", "hami-gpu", "productName", "NVIDIA-A100")
	d.Capacity["cores"] = resourcev1.DeviceCapacity{Value: resource.MustParse("100")}
	yes := true
	d.AllowMultipleAllocations = &yes
	return d
}

func gpuDev(name, memory string) resourcev1.Device { return dev(name, memory, "type", "gpu") }

func migDev(name, profile, memory string) resourcev1.Device {
	return dev(name, memory, "type", "mig", "profile", profile)
}

// slice is a ResourceSlice of driver on node (pool = node).
func slice(name, driver, node string, devs ...resourcev1.Device) *resourcev1.ResourceSlice {
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: &node, Devices: devs,
			Pool: resourcev1.ResourcePool{Name: node, ResourceSliceCount: 1}},
	}
}

// allocated is an allocation of the named devices (pool = node) to request,
// on node pool as the scheduler names it.
func allocated(request, driver, pool string, devices ...string) *resourcev1.AllocationResult {
	a := &resourcev1.AllocationResult{NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{pool}}}}}}}
	for _, d := range devices {
		a.Devices.Results = append(a.Devices.Results, resourcev1.DeviceRequestAllocationResult{Request: request, Driver: driver, Pool: pool, Device: d})
	}
	return a
}

func inventory(ss ...*resourcev1.ResourceSlice) *dra.Inventory { return dra.NewInventory(ss) }

func nvidiaOpts(deviceMiB int64) map[string]effective.Options {
	return map[string]effective.Options{effective.NvidiaName: {DeviceMemoryMiB: deviceMiB}}
}
