package gpuadmit.examples.max_gpus_per_pod_test

import data.gpuadmit.admission

pod_with(namespace, gpus) := {
	"operation": "CREATE",
	"namespace": namespace,
	"pod": {"name": "train", "labels": {}, "nodeSelector": {}},
	"namespaceLabels": {},
	"demand": {
		"effective": {"gpu": gpus, "gpumem": gpus * 1024, "gpucores": 0},
		"containers": [{
			"name": "c", "role": "app", "gpu": gpus, "gpumemPerDevice": 1024, "gpumemPercent": 0,
			"gpucoresPerDevice": 0, "unresolved": false,
			"total": {"gpu": gpus, "gpumem": gpus * 1024, "gpucores": 0},
		}],
	},
	"settings": {"resourceNames": {"gpu": "nvidia.com/gpu"}},
}

# The messages of this policy only: other policies may deny the same input.
per_pod_denials(namespace, gpus) := {msg |
	some msg in admission.deny with input as pod_with(namespace, gpus)
	contains(msg, "per pod outside namespace")
}

test_five_gpus_denied if {
	per_pod_denials("team-a", 5) == {`namespace "team-a": nvidia.com/gpu: pod needs 5 devices, at most 4 per pod outside namespace "research"`}
}

test_five_gpus_allowed_in_research if {
	count(per_pod_denials("research", 5)) == 0
}

test_four_gpus_allowed if {
	count(per_pod_denials("team-a", 4)) == 0
}
