# An example operator policy: at most 4 GPUs per pod in namespaces other
# than "research". Load it with `gpuadmit eval --policy examples/policy` or
# test it with `gpuadmit policy test examples/policy`.
package gpuadmit.admission

max_gpus_per_pod := 4

deny contains msg if {
	input.namespace != "research"
	input.demand.effective.gpu > max_gpus_per_pod
	msg := sprintf("namespace %q: %s: pod needs %d devices, at most %d per pod outside namespace \"research\"", [
		input.namespace, input.settings.resourceNames.gpu, input.demand.effective.gpu, max_gpus_per_pod,
	])
}
