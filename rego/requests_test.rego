package gpuadmit.builtin_test

import data.gpuadmit.builtin

test_invalid_request_denied_naming_container_resource_value if {
	inp := complete(object.union(fits, {"demand": {"effective": vec(0, 0, 0), "containers": [], "unresolved": [], "errors": [
		{"container": "app", "resource": "nvidia.com/gpu", "value": "1500m", "reason": "must be a whole number"},
		{"container": "side", "resource": "nvidia.com/gpucores", "value": "150", "reason": "must be within 0..100"},
	]}}))
	builtin.deny == {
		`namespace "team-a": pod "llm": container "app": nvidia.com/gpu "1500m": must be a whole number`,
		`namespace "team-a": pod "llm": container "side": nvidia.com/gpucores "150": must be within 0..100`,
	} with input as inp
}

unresolved_input := complete(object.union(
	with_capacity(fits, {"gpuNodes": 0, "eligibleNodes": 0, "maxDevicesPerNode": 0, "shapes": []}),
	{"demand": {
		"effective": vec(1, 0, 0), "unresolved": ["nb"], "errors": [],
		"containers": [object.union(container("nb", "app", 1, 0, 0), {"gpumemPercent": 50, "unresolved": true})],
	}},
))

unresolved_prefix := `namespace "team-a": pod "llm": container "nb" needs 50 % of the memory of each of its 1 device(s) (nvidia.com/gpumem-percentage, or the whole device when no nvidia.com/gpumem is set), but no GPU node it could run on announces its device memory, so the request cannot be counted in MiB against the namespace's limits; set nvidia.com/gpumem in MiB, or `

# No node announces any GPU: both ways a node can announce its GPUs.
test_unresolved_percentage_denied_with_explanation if {
	builtin.deny == {concat("", [unresolved_prefix, `have the GPU nodes announce their devices: HAMi's device plugin registers them in the node annotation hami.io/node-nvidia-register, gpuadmit's node agent (the chart's agent.enabled) in gpuadmit.io/gpu-devices`])} with input as unresolved_input
}

# On a HAMi cluster (its nodes registered by HAMi's device plugin) the
# advice names HAMi's registration, never the node agent's annotation,
# which such a cluster need not run; nodes of both kinds: HAMi's. (The
# pod's nodes announce nothing while others do: capacity.rego denies it too,
# as matching no GPU node.)
test_unresolved_on_a_hami_cluster_names_hamis_registration if {
	every sources in [["hami.io/node-nvidia-register"], ["gpuadmit.io/gpu-devices", "hami.io/node-nvidia-register"]] {
		names_hamis_registration(sources)
	}
}

names_hamis_registration(sources) if {
	inp := object.union(unresolved_input, {"capacity": {"sources": sources, "gpuNodes": 2}})
	concat("", [unresolved_prefix, `check that HAMi's device plugin runs on the nodes the pod may run on: it registers their GPUs in the node annotation hami.io/node-nvidia-register`]) in builtin.deny with input as inp
	denials := builtin.deny with input as inp
	every msg in denials {
		not contains(msg, "gpuadmit.io/gpu-devices")
	}
}

# Where gpuadmit's node agent announces the GPUs: its annotation.
test_unresolved_on_an_agent_cluster_names_the_agents_annotation if {
	inp := object.union(unresolved_input, {"capacity": {"sources": ["gpuadmit.io/gpu-devices"], "gpuNodes": 2}})
	concat("", [unresolved_prefix, `check that gpuadmit's node agent runs on the nodes the pod may run on: it announces their GPUs in the node annotation gpuadmit.io/gpu-devices`]) in builtin.deny with input as inp
	denials := builtin.deny with input as inp
	every msg in denials {
		not contains(msg, "hami.io/")
	}
}

test_resolved_percentage_allowed if {
	inp := with_demand(fits, vec(1, 12288, 0), [object.union(container("nb", "app", 1, 12288, 0), {"gpumemPercent": 50})])
	count(builtin.deny) == 0 with input as inp
}

test_update_of_unresolved_pod_not_denied if {
	count(builtin.deny) == 0 with input as object.union(unresolved_input, {"operation": "UPDATE"})
}

test_update_with_invalid_request_denied if {
	inp := complete(object.union(fits, {"operation": "UPDATE", "demand": {"errors": [
		{"container": "app", "resource": "nvidia.com/gpu", "value": "-1", "reason": "must not be negative"},
	]}}))
	builtin.deny == {`namespace "team-a": pod "llm": container "app": nvidia.com/gpu "-1": must not be negative`} with input as inp
}

# A whole Ascend NPU no node announces the memory of: denied, naming the
# family's resources, never admitted at 0 MiB.
unresolved_npu := object.union(no_nvidia, {"demand": {"families": {"ascend-910B2": {
	"effective": vec(1, 0, 0), "unresolved": ["npu"], "maxPerDevice": vec(1, 0, 0),
	"containers": [object.union(container("npu", "app", 1, 0, 0), {"gpumemPercent": 100, "unresolved": true})],
}}}, "settings": {"families": {"ascend-910B2": {"resourceNames": ascend_names, "memoryFactor": 1}}}})

npu_prefix := `namespace "team-a": pod "llm": container "npu" needs 100 % of the memory of each of its 1 huawei.com/Ascend910B2 device(s), but no node it could run on announces the memory of its ascend-910B2 devices, so the request cannot be counted in MiB against the namespace's limits; set huawei.com/Ascend910B2-memory explicitly`

# The family's own register annotation is named.
test_unresolved_other_family_denied if {
	inp := object.union(unresolved_npu, {"settings": {"families": {"ascend-910B2": {"registerAnnotation": "hami.io/node-register-Ascend910B2"}}}})
	builtin.deny == {concat("", [npu_prefix, `, or check that HAMi's device plugin for them runs on the nodes the pod may run on: it registers their devices in the node annotation hami.io/node-register-Ascend910B2`])} with input as inp
}

# A family no annotation sizes: only the remedy that works.
test_unresolved_family_without_register_annotation if {
	builtin.deny == {concat("", [npu_prefix, ` (no node annotation announces the size of these devices)`])} with input as unresolved_npu
}

test_unresolved_first_family_denied_once if {
	count(builtin.deny) == 1 with input as unresolved_input
}

# A claim's unreadable request names the claim and its request.
test_claim_error_names_the_request if {
	inp := object.union(base, {
		"claim": {"name": "c", "deviceClassNames": ["hami-core-gpu.project-hami.io"]},
		"demand": object.union(base.demand, {"errors": [{"container": "c/gpu", "resource": "memory", "value": "-5", "reason": "must not be negative"}]}),
	})
	msgs := {m | some m in builtin.deny; contains(m, "ResourceClaim")} with input as inp
	msgs == {`namespace "team-a": ResourceClaim "c": request "c/gpu": memory "-5": must not be negative`}
}
