# Cores cap in dev namespaces
# In a namespace labelled env: dev no container may ask for more than 50
# gpucores (percent of a device's compute) per device.
# gpucoresPerDevice 0 means unset: HAMi does not limit the container's cores
# then, so it may use the whole device's compute; this policy allows it
# (require gpucores in another rule to close that gap). A container that books
# whole devices (no gpumem, or gpumem-percentage 100) and sets no gpucores gets
# 100 from HAMi, so it is denied here: it must set gpucores to at most 50.
# Reads: input.operation, input.namespace, input.pod.name,
# input.namespaceLabels.env, input.demand.containers[] (name, gpu,
# gpucoresPerDevice) and input.settings.resourceNames.gpucores.
# Checked on CREATE only: an UPDATE cannot change a pod's GPU requests.
package gpuadmit.admission

dev_cores_cap_max := 50

deny contains msg if {
	input.operation == "CREATE"
	input.namespaceLabels.env == "dev"
	some c in input.demand.containers
	c.gpu > 0
	c.gpucoresPerDevice > dev_cores_cap_max
	msg := sprintf("namespace %q: pod %q: container %q asks for %d %s per device, namespace label env=\"dev\" allows at most %d%s", [
		input.namespace, input.pod.name, c.name, c.gpucoresPerDevice, input.settings.resourceNames.gpucores,
		dev_cores_cap_max, dev_cores_cap_note(c),
	])
}

dev_cores_cap_note(c) := " (a whole-device request without gpucores gets 100, as in HAMi)" if c.gpumemPercent == 100

else := ""
