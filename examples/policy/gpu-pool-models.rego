# GPU model allow-list per namespace pool
# A namespace labelled gpuadmit.io/gpu-pool names a pool; a GPU pod there must
# select one of the pool's GPU models with its nodeSelector
# nvidia.com/gpu.product (the label NVIDIA's GPU feature discovery puts on
# nodes). A namespace without the label is unrestricted. A pool missing from
# the table below allows no model (fail closed: a typo in the label is
# reported, not ignored). Models chosen through node affinity instead of the
# nodeSelector are not seen (the input carries only the nodeSelector), so
# such pods are denied too.
# Reads: input.operation, input.namespace, input.pod.name,
# input.pod.nodeSelector, input.namespaceLabels["gpuadmit.io/gpu-pool"],
# input.demand.effective.gpu (pods that need no device are not checked).
# Checked on CREATE only: a pod's nodeSelector cannot change afterwards.
package gpuadmit.admission

gpu_pool_models_allowed := {
	"inference": {"NVIDIA-A10", "NVIDIA-L4"},
	"training": {"NVIDIA-H200"},
}

deny contains msg if {
	input.operation == "CREATE"
	input.demand.effective.gpu > 0
	pool := input.namespaceLabels["gpuadmit.io/gpu-pool"]
	models := object.get(gpu_pool_models_allowed, pool, set())
	selected := object.get(input.pod.nodeSelector, "nvidia.com/gpu.product", "")
	not selected in models
	msg := sprintf("namespace %q: pod %q: namespace label gpuadmit.io/gpu-pool=%q allows nodeSelector nvidia.com/gpu.product %s; %s", [
		input.namespace, input.pod.name, pool, gpu_pool_models_list(models), gpu_pool_models_found(selected),
	])
}

gpu_pool_models_list(models) := concat(" or ", sort(models)) if count(models) > 0

else := "nothing (the pool is not in the policy's table)"

gpu_pool_models_found("") := "the pod sets none"

gpu_pool_models_found(selected) := sprintf("the pod selects %q", [selected]) if selected != ""
