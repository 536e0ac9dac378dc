# Per-pod GPU cap by namespace tier
# A namespace labelled gpu-tier: bronze allows at most 1 GPU per pod, silver
# at most 2. A namespace without the label, or with another value (gold, say),
# has no cap from this policy.
# Reads: input.operation, input.namespace, input.pod.name,
# input.namespaceLabels["gpu-tier"], input.demand.effective.gpu (the pod's
# devices: the larger of its steady state and its init-container peak).
# Checked on CREATE only: an UPDATE cannot change a pod's GPU requests.
package gpuadmit.admission

gpu_tier_cap_max := {"bronze": 1, "silver": 2}

deny contains msg if {
	input.operation == "CREATE"
	tier := input.namespaceLabels["gpu-tier"]
	limit := gpu_tier_cap_max[tier]
	input.demand.effective.gpu > limit
	msg := sprintf("namespace %q: pod %q: pod needs %d GPUs, namespace label gpu-tier=%q allows at most %d per pod", [
		input.namespace, input.pod.name, input.demand.effective.gpu, tier, limit,
	])
}
