package gpuadmit.examples.dev_cores_cap_test

import data.gpuadmit.admission

container(name, gpu, cores, percent) := {
	"name": name, "role": "app", "gpu": gpu, "gpumemPerDevice": 4096, "gpumemPercent": percent,
	"gpucoresPerDevice": cores, "unresolved": false,
	"total": {"gpu": gpu, "gpumem": gpu * 4096, "gpucores": gpu * cores},
}

pod_with(ns_labels, containers) := {
	"operation": "CREATE",
	"namespace": "dev-ns",
	"pod": {"name": "try", "labels": {}, "nodeSelector": {}},
	"namespaceLabels": ns_labels,
	"demand": {"effective": {"gpu": 1, "gpumem": 4096, "gpucores": 0}, "containers": containers},
	"settings": {"resourceNames": {"gpucores": "nvidia.com/gpucores"}},
}

dev := {"env": "dev", "team": "a"}

# The messages of this policy only: other policies may deny the same input.
denials(inp) := {msg |
	some msg in admission.deny with input as inp
	contains(msg, "env=\"dev\"")
}

test_over_cap_denied if {
	denials(pod_with(dev, [container("main", 1, 51, 0)])) == {`namespace "dev-ns": pod "try": container "main" asks for 51 nvidia.com/gpucores per device, namespace label env="dev" allows at most 50`}
}

test_whole_device_default_cores_denied if {
	denials(pod_with(dev, [container("main", 1, 100, 100)])) == {`namespace "dev-ns": pod "try": container "main" asks for 100 nvidia.com/gpucores per device, namespace label env="dev" allows at most 50 (a whole-device request without gpucores gets 100, as in HAMi)`}
}

test_at_cap_allowed if {
	count(denials(pod_with(dev, [container("main", 2, 50, 0)]))) == 0
}

# 0 is unset: HAMi does not limit the cores, and this policy allows it.
test_unset_allowed if {
	count(denials(pod_with(dev, [container("main", 1, 0, 0)]))) == 0
}

test_only_offending_containers_named if {
	denials(pod_with(dev, [container("ok", 1, 30, 0), container("greedy", 1, 80, 0)])) == {`namespace "dev-ns": pod "try": container "greedy" asks for 80 nvidia.com/gpucores per device, namespace label env="dev" allows at most 50`}
}

test_other_namespaces_not_capped if {
	count(denials(pod_with({}, [container("main", 1, 100, 0)]))) == 0
	count(denials(pod_with({"env": "prod"}, [container("main", 1, 100, 0)]))) == 0
}
