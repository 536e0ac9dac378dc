package gpuadmit.examples.gpu_pool_models_test

import data.gpuadmit.admission

pod_with(pool_labels, node_selector, gpus) := {
	"operation": "CREATE",
	"namespace": "ns",
	"pod": {"name": "serve", "labels": {}, "nodeSelector": node_selector},
	"namespaceLabels": pool_labels,
	"demand": {"effective": {"gpu": gpus, "gpumem": 4096, "gpucores": 0}, "containers": []},
}

inference := {"gpuadmit.io/gpu-pool": "inference"}

training := {"gpuadmit.io/gpu-pool": "training"}

product(model) := {"nvidia.com/gpu.product": model, "kubernetes.io/os": "linux"}

# The messages of this policy only: other policies may deny the same input.
denials(inp) := {msg |
	some msg in admission.deny with input as inp
	contains(msg, "gpuadmit.io/gpu-pool=")
}

test_inference_allows_a10_and_l4 if {
	count(denials(pod_with(inference, product("NVIDIA-A10"), 1))) == 0
	count(denials(pod_with(inference, product("NVIDIA-L4"), 1))) == 0
}

test_inference_denies_h200 if {
	denials(pod_with(inference, product("NVIDIA-H200"), 1)) == {`namespace "ns": pod "serve": namespace label gpuadmit.io/gpu-pool="inference" allows nodeSelector nvidia.com/gpu.product NVIDIA-A10 or NVIDIA-L4; the pod selects "NVIDIA-H200"`}
}

test_inference_denies_no_selector if {
	denials(pod_with(inference, {}, 1)) == {`namespace "ns": pod "serve": namespace label gpuadmit.io/gpu-pool="inference" allows nodeSelector nvidia.com/gpu.product NVIDIA-A10 or NVIDIA-L4; the pod sets none`}
}

test_training_allows_h200_only if {
	count(denials(pod_with(training, product("NVIDIA-H200"), 8))) == 0
	count(denials(pod_with(training, product("NVIDIA-A10"), 1))) == 1
}

test_unknown_pool_denied if {
	denials(pod_with({"gpuadmit.io/gpu-pool": "batch"}, product("NVIDIA-A10"), 1)) == {`namespace "ns": pod "serve": namespace label gpuadmit.io/gpu-pool="batch" allows nodeSelector nvidia.com/gpu.product nothing (the pool is not in the policy's table); the pod selects "NVIDIA-A10"`}
}

test_no_pool_label_unrestricted if {
	count(denials(pod_with({"gpu-tier": "bronze"}, product("NVIDIA-H200"), 1))) == 0
	count(denials(pod_with({}, {}, 1))) == 0
}

test_no_devices_not_checked if {
	count(denials(pod_with(inference, {}, 0))) == 0
}
