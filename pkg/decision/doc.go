// Package decision makes gpuadmit's admission decision for one pod: it
// computes the pod's effective GPU demand (memory percentages resolved
// against the largest device the pod could land on), reads the namespace's
// usage, reservations and limits, each team quota's (GPUClusterQuota) that
// counts the namespace, for the team and for the user the pod is charged
// to, and the eligible nodes' devices from the ledger, builds the versioned policy input document and evaluates the
// policies. The webhook and `gpuadmit eval` call the same Decide, so the
// command line shows exactly what admission would answer.
//
// Pods without any managed GPU resource take a fast path: allowed, without
// evaluating any policy.
package decision
