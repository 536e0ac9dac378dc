// Package workloads plays `make demo`'s fifth scenario on a running local
// cluster with the real kube-controller-manager
// (internal/cluster/local, Config.ControllerManager): a Deployment applied
// past its namespace's quota is refused as a whole before any pod exists,
// the same Deployment scaled within the quota is admitted and the real
// ReplicaSet controller creates its pods through the pod webhook, and
// `gpuadmit why` explains a second Deployment admitted with a warning whose
// pod is refused. It prints what it measured and fails, rather than
// prints, when what it observes does not hold. cmd/demo and tests/demo run
// it.
package workloads
