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
	builtin.deny == {`namespace "team-a": pod "llm": container "train" needs 3 device(s) with 1024 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 24576 MiB, 100 gpucores; at most 2 healthy device(s) on one node)`} with input as multi(3, 1024, 0)
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
		`namespace "team-a": pod "llm": no GPU node matches the pod's nodeSelector and required node affinity, so container "convert" can never get its 1 device(s)`,
		`namespace "team-a": pod "llm": no GPU node matches the pod's nodeSelector and required node affinity, so container "server" can never get its 1 device(s)`,
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

# Another tenant's node: its name and the cluster's node count appear in the
# input, in no message (a denial names the tenant's own objects and the sizes
# that decided).
other_tenants_node := {
	"gpuNodes": 4242, "eligibleNodes": 1, "maxDevicesPerNode": 2,
	"largestDevice": {"node": "team-b-secret-h200", "gpumem": 143771, "gpucores": 100},
	"shapes": [{
		"nodes": 1, "example": "team-b-secret-h200", "devices": [{"gpumem": 143771, "gpucores": 100}, {"gpumem": 143771, "gpucores": 100}],
		"deviceCount": 2, "smallest": {"gpumem": 143771, "gpucores": 100},
	}],
}

test_messages_name_no_node if {
	too_many := without_limits(with_demand(with_capacity(fits, other_tenants_node), vec(3, 3072, 0), [container("train", "app", 3, 1024, 0)]))
	none_eligible := with_capacity(fits, object.union(other_tenants_node, {"eligibleNodes": 0, "shapes": []}))
	every inp in [too_many, none_eligible] {
		msgs := builtin.deny with input as inp
		count(msgs) > 0
		every m in msgs {
			not contains(m, "team-b-secret-h200")
			not contains(m, "4242")
		}
	}
}

test_message_names_the_sizes_that_decided if {
	inp := without_limits(with_demand(with_capacity(fits, other_tenants_node), vec(3, 3072, 0), [container("train", "app", 3, 1024, 0)]))
	builtin.deny == {`namespace "team-a": pod "llm": container "train" needs 3 device(s) with 1024 MiB and 0 gpucores each; no node the pod may run on has that (largest device: 143771 MiB, 100 gpucores; at most 2 healthy device(s) on one node)`} with input as inp
}
