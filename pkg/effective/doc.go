// Package effective computes the effective GPU demand of a pod: it parses each
// container's GPU resources (HAMi's resource model), assigns container roles by
// name (init, sidecar, app), combines them with the Kubernetes formula of
// KEP-753 (max of steady state and init peak, per dimension), collapses device
// assignments per GPU UUID, and derives the lifecycle target the usage ledger
// stores for a pod from the pod's spec and status.
//
// The package is pure: no I/O, no clocks, no globals, and it imports nothing
// of the gpuadmit project, so the webhook, the ledger and the CLI all compute
// exactly the same numbers.
package effective
