// Package devices encodes and decodes the annotations that carry GPU device
// information between the node agent, HAMi-style schedulers and gpuadmit:
//
//   - gpuadmit.io/gpu-devices on a Node (written by gpuadmit's node agent),
//   - hami.io/node-nvidia-register on a Node (written by HAMi's device plugin),
//   - hami.io/vgpu-devices-allocated on a Pod (written by a HAMi-style scheduler).
//
// Decoders never guess: malformed input is an error that says what and where.
package devices
