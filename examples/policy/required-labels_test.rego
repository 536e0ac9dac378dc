package gpuadmit.examples.required_labels_test

import data.gpuadmit.admission

pod_with(operation, labels) := {
	"operation": operation,
	"namespace": "team-a",
	"pod": {"name": "train", "labels": labels, "nodeSelector": {}},
	"namespaceLabels": {},
	"demand": {"effective": {"gpu": 1, "gpumem": 4096, "gpucores": 0}, "containers": []},
}

# The messages of this policy only: other policies may deny the same input.
denials(inp) := {msg |
	some msg in admission.deny with input as inp
	contains(msg, "required label")
}

missing := `namespace "team-a": pod "train": required label "cost-center" is missing or empty; every GPU pod must carry it`

test_no_labels_denied if {
	denials(pod_with("CREATE", {})) == {missing}
}

test_other_labels_only_denied if {
	denials(pod_with("CREATE", {"app": "train", "Cost-Center": "42"})) == {missing}
}

test_empty_value_denied if {
	denials(pod_with("CREATE", {"cost-center": ""})) == {missing}
}

test_cost_center_allowed if {
	count(denials(pod_with("CREATE", {"cost-center": "42", "app": "train"}))) == 0
}

test_update_not_checked if {
	count(denials(pod_with("UPDATE", {}))) == 0
}
