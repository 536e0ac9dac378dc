# Whole H200 cards for ml-leads only (a group-based exception)
# A pod that selects NVIDIA-H200 nodes (nodeSelector nvidia.com/gpu.product)
# may have a container that books whole devices (gpumemPercent 100: no
# gpumem, gpumem 0 or gpumem-percentage 100, as HAMi books it) only when the
# requesting user is in group ml-leads. Shares of an H200 are open to all.
# A gpumem in MiB as large as the whole card counts as a share here; compare
# gpumemPerDevice with input.capacity.largestDevice.gpumem to close that.
# The user is the one who creates the pod: for a Deployment's pods that is
# the controller's service account, not the person who applied it.
# Reads: input.operation, input.namespace, input.pod.name,
# input.pod.nodeSelector, input.userInfo (username, groups),
# input.demand.containers[] (name, gpu, gpumemPercent).
# Checked on CREATE only: an UPDATE cannot change a pod's GPU requests.
package gpuadmit.admission

h200_whole_cards_group := "ml-leads"

h200_whole_cards_member if h200_whole_cards_group in input.userInfo.groups

deny contains msg if {
	input.operation == "CREATE"
	input.pod.nodeSelector["nvidia.com/gpu.product"] == "NVIDIA-H200"
	not h200_whole_cards_member
	some c in input.demand.containers
	c.gpu > 0
	c.gpumemPercent == 100
	msg := sprintf("namespace %q: pod %q: container %q books %d whole NVIDIA-H200 device(s); only members of group %q may (user %q is not), others must request a share of the memory", [
		input.namespace, input.pod.name, c.name, c.gpu, h200_whole_cards_group, input.userInfo.username,
	])
}
