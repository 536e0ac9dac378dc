// Package devices encodes and decodes the annotations that carry device
// information between the node agent, HAMi-style schedulers and gpuadmit:
//
//   - gpuadmit.io/gpu-devices on a Node (written by gpuadmit's node agent:
//     DecodeNodeDevices, EncodeNodeDevices),
//   - hami.io/node-nvidia-register on a Node (written by HAMi's nvidia device
//     plugin: DecodeHAMiNodeRegister, into gpuadmit Devices),
//   - hami.io/vgpu-devices-allocated on a Pod (written by a HAMi-style
//     scheduler: DecodeAllocation, PodAssignment),
//   - and the same two kinds of annotation of every other HAMi device
//     backend (Ascend, Cambricon, Hygon, MetaX, Enflame, Moore Threads,
//     Iluvatar, Kunlunxin, AWS Neuron, AMD, Vastai, Biren).
//
// HAMiAnnotations is the table of HAMi's backends: the Node annotation each
// registers its devices in and its encoding (HAMi's JSON, HAMi's older
// colon list, a vendor's own JSON, or none when HAMi derives the devices
// from node capacity), the Pod annotations its assignment is written to,
// the Type strings of their entries, and the units of their figures.
// BackendAnnotations.DecodeNodeRegister decodes a backend's Node
// annotation and PodAssignmentOf its Pod annotation; DecodeHAMiRegister,
// DecodeMetaxSGPURegister, DecodeEnflameDRSCapacity and DecodeAllocation
// decode one encoding each.
//
// Decoders never guess: malformed input is an error that says what and
// where, and a device registered without memory or without a share is
// malformed, never a device of no capacity. BoundDevices and
// BoundHAMiDevices leave out the devices above a family's plausibility
// bound (DefaultMaxDeviceMemoryMiB, 1 TiB, unless configured) and name
// them in an *ImplausibleError.
package devices
