package gpuadmit.examples.gpu_tier_cap_test

import data.gpuadmit.admission

pod_with(operation, ns_labels, gpus) := {
	"operation": operation,
	"namespace": "ns",
	"pod": {"name": "train", "labels": {}, "nodeSelector": {}},
	"namespaceLabels": ns_labels,
	"demand": {"effective": {"gpu": gpus, "gpumem": gpus * 1024, "gpucores": 0}, "containers": []},
}

# The messages of this policy only: other policies may deny the same input.
denials(inp) := {msg |
	some msg in admission.deny with input as inp
	contains(msg, "namespace label gpu-tier=")
}

test_bronze_two_denied if {
	denials(pod_with("CREATE", {"gpu-tier": "bronze"}, 2)) == {`namespace "ns": pod "train": pod needs 2 GPUs, namespace label gpu-tier="bronze" allows at most 1 per pod`}
}

test_bronze_one_allowed if {
	count(denials(pod_with("CREATE", {"gpu-tier": "bronze"}, 1))) == 0
}

test_silver_three_denied if {
	denials(pod_with("CREATE", {"gpu-tier": "silver"}, 3)) == {`namespace "ns": pod "train": pod needs 3 GPUs, namespace label gpu-tier="silver" allows at most 2 per pod`}
}

test_silver_two_allowed if {
	count(denials(pod_with("CREATE", {"gpu-tier": "silver"}, 2))) == 0
}

test_no_label_no_cap if {
	count(denials(pod_with("CREATE", {"team": "a"}, 8))) == 0
}

test_other_tier_no_cap if {
	count(denials(pod_with("CREATE", {"gpu-tier": "gold"}, 8))) == 0
}

test_update_not_checked if {
	count(denials(pod_with("UPDATE", {"gpu-tier": "bronze"}, 2))) == 0
}
