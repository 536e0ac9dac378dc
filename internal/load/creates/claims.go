package creates

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HAMiDRAClass is HAMi-DRA's DeviceClass.
const HAMiDRAClass = "hami-core-gpu.project-hami.io"

// HAMiDRAClaim is a ResourceClaim as HAMi-DRA's mutating webhook builds it
// from a container's nvidia.com/gpu: count, gpumem: memMiB and gpucores:
// cores (memMiB or cores 0: not asked): one request "gpu" of its class, the
// memory in bytes (MiB × 1024 × 1024), the cores as they were, and its
// selector on the device type.
func HAMiDRAClaim(ns, name string, count, memMiB, cores int64) *resourcev1.ResourceClaim {
	req := map[resourcev1.QualifiedName]resource.Quantity{}
	if memMiB > 0 {
		req["memory"] = *resource.NewQuantity(memMiB*1024*1024, resource.DecimalSI)
	}
	if cores > 0 {
		req["cores"] = *resource.NewQuantity(cores, resource.DecimalSI)
	}
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: HAMiDRAClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount,
				Count: count, Capacity: &resourcev1.CapacityRequirements{Requests: req},
				Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes[%q].type == "hami-gpu"`, HAMiDRAClass)}}}},
		}}}}}
}
