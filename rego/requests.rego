# Valid, countable GPU requests
# A pod whose GPU request cannot be read (not a whole number, out of range,
# too large, duplicate container names) is denied with the container, the
# resource and the value. A memory percentage that cannot be converted to
# MiB, because no node the pod could run on announces its devices, is
# denied with an explanation: it could not be counted against any limit.
package gpuadmit.builtin

# Every deny and warn rule starts with input.guard.quiet == false: the
# input sets quiet only when every list the built-in rules start from is
# empty, so that OPA's rule index skips all of them with one lookup when
# none can fire (docs/policy-input.md, guard).

# A rule that starts from a list names its first element (errors[0]) as
# well: OPA's rule index then skips the rule without evaluating it when the
# list is empty, as it is for almost every pod.

deny contains msg if {
	input.guard.quiet == false
	input.demand.errors[0]
	some e in input.demand.errors
	not input.claim.name
	msg := sprintf("namespace %q: pod %q: container %q: %s %q: %s", [
		input.namespace, input.pod.name, e.container, e.resource, e.value, e.reason,
	])
}

# A ResourceClaim's errors name its request ("<claim>/<request>").
deny contains msg if {
	input.guard.quiet == false
	input.demand.errors[0]
	some e in input.demand.errors
	input.claim.name
	msg := sprintf("namespace %q: ResourceClaim %q: request %q: %s %q: %s", [
		input.namespace, input.claim.name, e.container, e.resource, e.value, e.reason,
	])
}

deny contains msg if {
	input.guard.quiet == false
	input.demand.unresolved[0]
	input.operation == "CREATE"
	some name in input.demand.unresolved
	some c in input.demand.containers
	c.name == name
	msg := sprintf("namespace %q: pod %q: container %q needs %d %% of the memory of each of its %d device(s) (%s, or the whole device when no %s is set), but no GPU node it could run on announces its device memory, so the request cannot be counted in MiB against the namespace's limits; set %s in MiB, or %s", [
		input.namespace, input.pod.name, c.name, c.gpumemPercent, c.gpu,
		input.settings.resourceNames["gpumem-percentage"], input.settings.resourceNames.gpumem,
		input.settings.resourceNames.gpumem, size_advice,
	])
}

# Where the cluster's GPU sizes come from, and so what to check: HAMi's
# registration on a cluster whose nodes HAMi registers (its device plugin
# is what must run on the pod's nodes), gpuadmit's node agent on one whose
# nodes the agent announces, both where no node announces any.
hami_register := "hami.io/node-nvidia-register"

agent_annotation := "gpuadmit.io/gpu-devices"

size_advice := sprintf("check that HAMi's device plugin runs on the nodes the pod may run on: it registers their GPUs in the node annotation %s", [hami_register]) if {
	hami_register in input.capacity.sources
} else := sprintf("check that gpuadmit's node agent runs on the nodes the pod may run on: it announces their GPUs in the node annotation %s", [agent_annotation]) if {
	agent_annotation in input.capacity.sources
} else := sprintf("have the GPU nodes announce their devices: HAMi's device plugin registers them in the node annotation %s, gpuadmit's node agent (the chart's agent.enabled) in %s", [hami_register, agent_annotation])

# The same for every other device family: a share of a device (or a whole
# device) of a family no node the pod could run on announces (HAMi's
# register annotation of that family) cannot be counted, so it is denied
# rather than admitted at 0 MiB. input.guard.unresolvedFamilies[0]: OPA's
# rule index skips the rule when no family has an unresolved container.
deny contains msg if {
	input.guard.quiet == false
	input.guard.unresolvedFamilies[0]
	input.operation == "CREATE"
	some family, demand in input.demand.families
	some name in demand.unresolved
	names := input.settings.families[family].resourceNames
	names.gpu != input.settings.resourceNames.gpu # the first family is above
	some c in demand.containers
	c.name == name
	msg := sprintf("namespace %q: pod %q: container %q needs %d %% of the memory of each of its %d %s device(s), but no node it could run on announces the memory of its %s devices, so the request cannot be counted in MiB against the namespace's limits; set %s explicitly%s", [
		input.namespace, input.pod.name, c.name, c.gpumemPercent, c.gpu, names.gpu, family, names.gpumem,
		family_advice(family),
	])
}

family_advice(family) := sprintf(", or check that HAMi's device plugin for them runs on the nodes the pod may run on: it registers their devices in the node annotation %s", [a]) if {
	a := input.settings.families[family].registerAnnotation
	a != ""
} else := " (no node annotation announces the size of these devices)"
