// Package effective is `gpuadmit effective`: each pod's, workload's and
// claim's effective device demand, as the webhook computes it, from
// manifests.
package effective
