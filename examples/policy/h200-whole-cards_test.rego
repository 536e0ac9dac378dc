package gpuadmit.examples.h200_whole_cards_test

import data.gpuadmit.admission

container(name, gpu, percent) := {
	"name": name, "role": "app", "gpu": gpu, "gpumemPerDevice": 143771, "gpumemPercent": percent,
	"gpucoresPerDevice": 100, "unresolved": false,
	"total": {"gpu": gpu, "gpumem": gpu * 143771, "gpucores": gpu * 100},
}

pod_with(groups, model, containers) := {
	"operation": "CREATE",
	"namespace": "research",
	"pod": {"name": "train", "labels": {}, "nodeSelector": {"nvidia.com/gpu.product": model}},
	"namespaceLabels": {},
	"userInfo": {"username": "bob", "groups": groups},
	"demand": {"effective": {"gpu": 1, "gpumem": 143771, "gpucores": 100}, "containers": containers},
}

# The messages of this policy only: other policies may deny the same input.
denials(inp) := {msg |
	some msg in admission.deny with input as inp
	contains(msg, "whole NVIDIA-H200")
}

test_non_member_denied if {
	denials(pod_with(["developers", "system:authenticated"], "NVIDIA-H200", [container("trainer", 2, 100)])) == {`namespace "research": pod "train": container "trainer" books 2 whole NVIDIA-H200 device(s); only members of group "ml-leads" may (user "bob" is not), others must request a share of the memory`}
}

test_no_groups_denied if {
	count(denials(pod_with([], "NVIDIA-H200", [container("trainer", 1, 100)]))) == 1
}

test_member_allowed if {
	count(denials(pod_with(["system:authenticated", "ml-leads"], "NVIDIA-H200", [container("trainer", 1, 100)]))) == 0
}

test_share_allowed_for_everyone if {
	count(denials(pod_with(["developers"], "NVIDIA-H200", [container("trainer", 1, 50)]))) == 0
	count(denials(pod_with(["developers"], "NVIDIA-H200", [container("trainer", 1, 0)]))) == 0
}

test_other_models_not_checked if {
	count(denials(pod_with(["developers"], "NVIDIA-A10", [container("trainer", 1, 100)]))) == 0
}

test_only_whole_containers_named if {
	denials(pod_with(["developers"], "NVIDIA-H200", [container("shard", 1, 25), container("trainer", 1, 100)])) == {`namespace "research": pod "train": container "trainer" books 1 whole NVIDIA-H200 device(s); only members of group "ml-leads" may (user "bob" is not), others must request a share of the memory`}
}
