// Package workloadcheck decides a workload as a whole when it is applied:
// each pod set's pods x one pod's demand (computed as admission computes
// it), summed, against every limit of the namespace that applies to them.
// Past a hard limit the workload can never run whole: denied (or warned,
// per configuration). Within the limits but past today's headroom (limit -
// used - reserved, the workload's own pods counted as used): admitted with
// a warning saying how many pods will wait. A Deployment rollout whose
// surge pods cannot fit is warned of. A change that only shrinks the
// workload is always allowed. Nothing is reserved: each pod is still
// decided at its own CREATE.
package workloadcheck
