package gpuadmit.admission_test

import data.gpuadmit.admission

per_pod_denials(gpus, namespace) := {msg |
	inp := object.union(with_demand(fits, vec(gpus, gpus * 1024, 0), [container("c", "app", gpus, 1024, 0)]), {"namespace": namespace})
	some msg in admission.deny with input as inp
	contains(msg, "per pod")
}

test_five_gpus_denied if {
	per_pod_denials(5, "team-a") == {`namespace "team-a": nvidia.com/gpu: pod needs 5 devices, at most 4 per pod outside namespace "research"`}
}

test_five_gpus_allowed_in_research if {
	count(per_pod_denials(5, "research")) == 0
}

test_four_gpus_allowed if {
	count(per_pod_denials(4, "team-a")) == 0
}
