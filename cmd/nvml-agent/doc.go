// Command nvml-agent runs on every GPU node (a DaemonSet, see
// manifests/nvml-agent): it discovers the node's GPUs through NVML and keeps
// its own Node's gpuadmit.io/gpu-devices annotation equal to them, patching
// only when they change. gpuadmit reads device capacity from that annotation.
//
// Usage:
//
//	nvml-agent [--node-name NAME] [--interval 1m] [--nvml real|mock:<system>]
//	           [--nvml-library libnvidia-ml.so.1] [--wait-for-nvml] [--once] [--print]
//	nvml-agent --version
//
// --once --print prints the annotation value and exits without an API
// server (for debugging a node). Exit status: 0 done or stopped by
// SIGTERM/SIGINT, 1 NVML or API failure, 2 bad flags.
package main
