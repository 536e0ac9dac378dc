// Package quotacheck reads what a ResourceQuota's spec.hard says about GPU
// resources and finds what gpuadmit would otherwise enforce silently other
// than as written, or not at all: a memory limit written in bytes ("24Gi",
// read as MiB, rounded down), a limit that is not a whole number (rounded
// down), and a limits. key that names a resource gpuadmit does not govern
// (a HAMi family whose section is not configured, or no resource any
// family knows). The ledger reads every ResourceQuota through it; its
// findings become the ledger's problems, which the command line warns of,
// the GPUUsage conditions and the ResourceQuota's Events name and the
// audit lists. It is pure: no client, no clock.
package quotacheck
