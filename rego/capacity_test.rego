package gpuadmit.builtin_test

import data.gpuadmit.builtin

two_a10 := {
	"gpuNodes": 2, "eligibleNodes": 1, "maxDevicesPerNode": 2,
	"largestDevice": {"node": "node2", "gpumem": 24576, "gpucores": 100},
	"shapes": [{
		"nodes": 1, "example": "node2", "devices": [{"gpumem": 24576, "gpucores": 100}, {"gpumem": 24576, "gpucores": 50}],
		"deviceCount": 2, "smallest": {"gpumem": 24576, "gpucores": 50},
	}],
}

multi(gpu, mem, cores) := without_limits(with_demand(
	with_capacity(fits, two_a10), vec(gpu, gpu * mem, gpu * cores),
	[container("train", "app", gpu, mem, cores)],
))

test_devices_that_fit_allowed if {
	count(builtin.deny) == 0 with input as multi(2, 24576, 50)
	count(builtin.deny) == 0 with input as multi(1, 24576, 100)
}

test_too_many_devices_denied if {
	builtin.deny == {`namespace "team-a": pod "llm": container "train" needs 3 device(s) with 1024 MiB and 0 gpucores each; no eligible node has that (1 of 2 GPU nodes eligible; largest device: 24576 MiB, 100 gpucores on node "node2"; at most 2 healthy device(s) on one node)`} with input as multi(3, 1024, 0)
}

test_each_device_must_fit if {
	# Two devices with 60 cores each: only one of node2's devices has them.
	count(builtin.deny) == 1 with input as multi(2, 1024, 60)
	count(builtin.deny) == 1 with input as multi(1, 30000, 0)
}

test_unsatisfiable_can_be_a_warning if {
	inp := with_settings(multi(3, 1024, 0), {"unsatisfiable": "warn"})
	count(builtin.deny) == 0 with input as inp
	count(builtin.warn) == 1 with input as inp
}

test_no_eligible_node_denied if {
	inp := with_capacity(fits, {"gpuNodes": 2, "eligibleNodes": 0, "maxDevicesPerNode": 0, "shapes": []})
	builtin.deny == {
		`namespace "team-a": pod "llm": no GPU node matches the pod's nodeSelector and required node affinity (2 GPU nodes known), so container "convert" can never get its 1 device(s)`,
		`namespace "team-a": pod "llm": no GPU node matches the pod's nodeSelector and required node affinity (2 GPU nodes known), so container "server" can never get its 1 device(s)`,
	} with input as inp
}

test_no_known_gpu_node_is_not_a_denial if {
	inp := with_capacity(fits, {"gpuNodes": 0, "eligibleNodes": 0, "maxDevicesPerNode": 0, "shapes": []})
	count(builtin.deny) == 0 with input as inp
}

test_update_is_not_checked_against_capacity if {
	inp := object.union(multi(3, 1024, 0), {"operation": "UPDATE"})
	count(builtin.deny) == 0 with input as inp
}
