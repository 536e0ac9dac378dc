# Required labels on GPU pods
# Every GPU pod must carry a non-empty `cost-center` label, so that its
# devices can be charged to a budget.
# Reads: input.operation, input.namespace, input.pod.name, input.pod.labels.
# Checked on CREATE only: the input has no old object, so an UPDATE cannot
# tell a label being removed from one that was never there, and denying
# UPDATEs would block every change (a finalizer's removal, say) to pods
# created before this policy. Labels of a running pod are rarely edited.
package gpuadmit.admission

required_labels_keys := ["cost-center"]

deny contains msg if {
	input.operation == "CREATE"
	some key in required_labels_keys
	object.get(input.pod.labels, key, "") == ""
	msg := sprintf("namespace %q: pod %q: required label %q is missing or empty; every GPU pod must carry it", [
		input.namespace, input.pod.name, key,
	])
}
