package gpuadmit.examples.shared_no_whole_cards_test

import data.gpuadmit.admission

container(name, gpu, mem, percent) := {
	"name": name, "role": "app", "gpu": gpu, "gpumemPerDevice": mem, "gpumemPercent": percent,
	"gpucoresPerDevice": 0, "unresolved": false,
	"total": {"gpu": gpu, "gpumem": gpu * mem, "gpucores": 0},
}

pod_with(ns_labels, containers) := {
	"operation": "CREATE",
	"namespace": "shared-ns",
	"pod": {"name": "notebook", "labels": {}, "nodeSelector": {}},
	"namespaceLabels": ns_labels,
	"demand": {"effective": {"gpu": 1, "gpumem": 24576, "gpucores": 0}, "containers": containers},
	"settings": {"resourceNames": {
		"gpu": "nvidia.com/gpu", "gpumem": "nvidia.com/gpumem",
		"gpumem-percentage": "nvidia.com/gpumem-percentage", "gpucores": "nvidia.com/gpucores",
	}},
}

shared := {"gpu-sharing": "shared"}

# The messages of this policy only: other policies may deny the same input.
denials(inp) := {msg |
	some msg in admission.deny with input as inp
	contains(msg, "gpu-sharing=")
}

whole(name, gpu) := sprintf(`namespace "shared-ns": pod "notebook": container %q takes the whole memory of each of its %d device(s) (nvidia.com/gpumem unset or 0, or nvidia.com/gpumem-percentage 100); namespace label gpu-sharing="shared" requires a share: set nvidia.com/gpumem in MiB or nvidia.com/gpumem-percentage below 100`, [name, gpu])

test_whole_card_denied if {
	denials(pod_with(shared, [container("jupyter", 1, 24576, 100)])) == {whole("jupyter", 1)}
}

test_only_whole_containers_named if {
	cs := [container("proxy", 1, 2048, 0), container("jupyter", 2, 24576, 100), container("half", 1, 12288, 50)]
	denials(pod_with(shared, cs)) == {whole("jupyter", 2)}
}

test_memory_share_allowed if {
	count(denials(pod_with(shared, [container("jupyter", 1, 4096, 0)]))) == 0
}

test_percentage_below_100_allowed if {
	count(denials(pod_with(shared, [container("jupyter", 1, 23347, 99)]))) == 0
}

test_no_devices_not_checked if {
	count(denials(pod_with(shared, [container("cores-only", 0, 0, 100)]))) == 0
}

test_other_namespaces_allow_whole_cards if {
	count(denials(pod_with({}, [container("jupyter", 1, 24576, 100)]))) == 0
	count(denials(pod_with({"gpu-sharing": "exclusive"}, [container("jupyter", 1, 24576, 100)]))) == 0
}
