# Satisfiable device requests
# When at least one GPU node is known, every container's per-device demand
# must fit on some node the pod may run on (nodeSelector and required node
# affinity honoured): enough healthy devices, each with enough memory and
# cores. Otherwise the pod could never start. input.settings.unsatisfiable
# "warn" turns the denial into a warning. Checked on CREATE only: an UPDATE
# of a running pod (labels, say) is not blocked because a device failed.
# The messages name only what the tenant may know: its own pod and
# containers and the sizes that decided (the largest device and the most
# devices on one node among the nodes the pod may run on), never a node's
# name or how many GPU nodes the cluster has: the nodes, and the devices
# other tenants use on them, are not the tenant's.
package gpuadmit.builtin

# Every deny and warn rule starts with input.guard.quiet == false: the
# input sets quiet only when every list the built-in rules start from is
# empty, so that OPA's rule index skips all of them with one lookup when
# none can fire (docs/policy-input.md, guard).

unsatisfiable contains msg if {
	input.operation == "CREATE"
	input.capacity.eligibleNodes == 0
	input.capacity.gpuNodes > 0
	some c in input.demand.containers
	c.gpu > 0
	msg := sprintf("namespace %q: pod %q: no GPU node matches the pod's nodeSelector and required node affinity, so container %q can never get its %d device(s)", [
		input.namespace, input.pod.name, c.name, c.gpu,
	])
}

unsatisfiable contains msg if {
	input.operation == "CREATE"
	input.capacity.shapes[0] # some node is eligible
	not all_fit
	some c in input.demand.containers
	c.gpu > 0
	not c.unresolved
	not fits_somewhere(c)
	l := input.capacity.largestDevice
	msg := sprintf("namespace %q: pod %q: container %q needs %d device(s) with %d MiB and %d gpucores each; no node the pod may run on has that (largest device: %d MiB, %d gpucores; at most %d healthy device(s) on one node)", [
		input.namespace, input.pod.name, c.name, c.gpu, c.gpumemPerDevice, c.gpucoresPerDevice,
		l.gpumem, l.gpucores, input.capacity.maxDevicesPerNode,
	])
}

# all_fit: one node can hold the largest per-device demand of every container
# on its smallest devices (the common case, checked once per pod).
all_fit if {
	m := input.demand.maxPerDevice
	some shape in input.capacity.shapes
	shape.deviceCount >= m.gpu
	shape.smallest.gpumem >= m.gpumem
	shape.smallest.gpucores >= m.gpucores
}

# fits_somewhere(c): some eligible node has c.gpu healthy devices each with
# c's per-device memory and cores. Most requests fit even the smallest device
# of a node (checked first, without looking at every device).
fits_somewhere(c) if {
	some shape in input.capacity.shapes
	shape.deviceCount >= c.gpu
	shape.smallest.gpumem >= c.gpumemPerDevice
	shape.smallest.gpucores >= c.gpucoresPerDevice
} else if {
	some shape in input.capacity.shapes
	big := [d | some d in shape.devices; d.gpumem >= c.gpumemPerDevice; d.gpucores >= c.gpucoresPerDevice]
	count(big) >= c.gpu
}

# When one node can hold every container (all_fit, the common case) nothing
# is unsatisfiable: both rules stop there, before the set is built; and
# OPA's rule index skips both when input.guard.unfit, the candidates
# computed with the input, is empty (docs/policy-input.md, guard).
deny contains msg if {
	input.guard.quiet == false
	input.guard.unfit[0]
	not all_fit
	input.settings.unsatisfiable != "warn"
	some msg in unsatisfiable
}

warn contains msg if {
	input.guard.quiet == false
	input.guard.unfit[0]
	not all_fit
	input.settings.unsatisfiable == "warn"
	some msg in unsatisfiable
}
