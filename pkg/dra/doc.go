// Package dra charges Dynamic Resource Allocation ResourceClaims against
// gpuadmit's GPU quotas.
//
// A claim is charged as the extended-resource container it stands for:
// HAMi-DRA's mutating webhook turns a container's nvidia.com/gpu: N,
// nvidia.com/gpumem: M (MiB) and nvidia.com/gpucores: C into a claim whose
// request "gpu" asks for N devices of the class hami-core-gpu.project-hami.io
// with capacity.requests memory: M×1024×1024 (bytes) and cores: C, and
// removes the extended resources from the pod. gpuadmit charges such a
// claim exactly what HAMi would have booked for the original container: each
// device request of a governed DeviceClass (a Class) is translated back into
// an equivalent container, named after the request, whose limits are in the
// names of the class's family, and effective.Compute reads it with HAMi's
// rules (no memory: the whole device; exclusive cores; ...).
//
// Two kinds of classes are charged:
//
//   - ModeCapacity: a device is shared and the request names its share in
//     capacity.requests (HAMi-DRA). Memory is bytes rounded up to MiB;
//     an allocated claim that consumed more than it asked is charged what
//     its devices hold.
//   - ModeDevice: whole devices, sized by what the ResourceSlices publish
//     (NVIDIA's gpu.nvidia.com and mig.nvidia.com): the largest eligible
//     device, or, once allocated, the largest allocated device.
//
// Eligibility is the scheduler's: the class's driver and every CEL selector
// of the request, compiled and evaluated with
// k8s.io/dynamic-resource-allocation/cel. A selector that fails at run time
// on a device counts the device as eligible (the worst case), and so does
// every device not evaluated once the claim's CEL budget (the caller's
// context and a runtime cost budget in the library's units) is spent. A
// request with firstAvailable is charged, per dimension, the largest of its
// subrequests (the worst the scheduler can pick), or only what it picked
// once allocated.
//
// A claim's selectors of governed classes are bounded
// (MaxClaimSelectorBytes, counted by SelectorBytes): a claim over the cap
// is invalid, and the marker a slimmed copy keeps instead of its selectors
// (OverCapSelectors) is read the same way.
//
// The Inventory lets a node speak only for itself: a node-local slice's
// devices are its node's, generations are compared per node, allocations
// are resolved on their node, and pools that are not node-local count only
// for trusted drivers. A device whose memory is implausible (above its
// family's bound, or not above 0) sizes nobody's charge. What is refused is
// reported (Inventory.Problems, Charger.Implausible), as is a DeviceClass
// outside the governed ones that can select governed devices
// (Charger.UngovernedClass).
//
// The package is pure apart from the caches the Charger and the Inventory
// hold (compiled selectors, what selectors picked; both LRU): no I/O, no
// clocks, no package-level state of its own.
package dra
