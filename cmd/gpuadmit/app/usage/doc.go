// Package usage is `gpuadmit usage`: each namespace's GPU usage against its
// quotas and each node's devices, from a dump or the live cluster.
package usage
