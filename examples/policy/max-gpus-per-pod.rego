# An example operator policy: at most 4 GPUs per pod in namespaces other
# than "research". Load it with `gpuadmit eval --policy examples/policy` or
# test it with `gpuadmit policy test examples/policy`.
# Reads: input.namespace, input.demand.effective.gpu (the pod's devices:
# max of its steady state and its init-container peak) and
# input.settings.resourceNames.gpu. Checked on CREATE and UPDATE alike: a
# pod's GPU count cannot change, so an UPDATE is denied only for a pod that
# was admitted before this policy was loaded.
package gpuadmit.admission

max_gpus_per_pod := 4

deny contains msg if {
	input.namespace != "research"
	input.demand.effective.gpu > max_gpus_per_pod
	msg := sprintf("namespace %q: %s: pod needs %d devices, at most %d per pod outside namespace \"research\"", [
		input.namespace, input.settings.resourceNames.gpu, input.demand.effective.gpu, max_gpus_per_pod,
	])
}
