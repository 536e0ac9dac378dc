# No whole cards in shared namespaces
# In a namespace labelled gpu-sharing: shared, every container that needs
# devices must ask for a share of each device's memory: gpumem in MiB, or a
# gpumem-percentage below 100. A container whose gpumemPercent is 100 books
# the whole device, as HAMi does when neither is set, when gpumem is 0 or when
# the percentage is 100; it is denied, by name.
# Reads: input.operation, input.namespace, input.pod.name,
# input.namespaceLabels["gpu-sharing"], input.demand.containers[] (name, gpu,
# gpumemPercent) and input.settings.resourceNames (for the message).
# Checked on CREATE only: an UPDATE cannot change a pod's GPU requests.
package gpuadmit.admission

deny contains msg if {
	input.operation == "CREATE"
	input.namespaceLabels["gpu-sharing"] == "shared"
	some c in input.demand.containers
	c.gpu > 0
	c.gpumemPercent == 100
	names := input.settings.resourceNames
	msg := sprintf("namespace %q: pod %q: container %q takes the whole memory of each of its %d device(s) (%s unset or 0, or %s 100); namespace label gpu-sharing=\"shared\" requires a share: set %s in MiB or %s below 100", [
		input.namespace, input.pod.name, c.name, c.gpu,
		names.gpumem, names["gpumem-percentage"],
		names.gpumem, names["gpumem-percentage"],
	])
}
