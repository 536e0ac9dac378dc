// Package nvmlmock completes go-nvml's mock DGX servers (dgxa100, dgxh100,
// dgxh200, dgxb200) so that NVML discovery can run on them: the mocks leave
// some methods nil, and calling a nil method panics. It fills those the node
// agent uses with the behaviour of the real library on that hardware (device
// attributes on a full GPU are not supported, as NVML documents; CUDA core
// counts, row remapping, MIG device handles), and gives the GPUs stable UUIDs
// so a mock node reports the same devices on every start.
//
// It serves the agent's --nvml mock:<system> backend and the tests.
package nvmlmock
