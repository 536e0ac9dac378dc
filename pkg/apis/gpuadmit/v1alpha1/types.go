package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version and the resource of this API.
const (
	Group    = "gpuadmit.io"
	Version  = "v1alpha1"
	Resource = "gpuusages"
	// ReservationSetResource is the resource of the GPUReservationSets.
	ReservationSetResource = "gpureservationsets"
	// ObjectName is the name of the one GPUUsage, and of the one
	// GPUReservationSet, of a namespace.
	ObjectName = "usage"
)

// GroupVersion is gpuadmit.io/v1alpha1.
func GroupVersion() schema.GroupVersion { return schema.GroupVersion{Group: Group, Version: Version} }

// AddToScheme registers GPUUsage, GPUReservationSet, GPUClusterQuota,
// GPUBudget, GPUClusterBudget and their lists.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion(), &GPUUsage{}, &GPUUsageList{}, &GPUReservationSet{}, &GPUReservationSetList{},
		&GPUClusterQuota{}, &GPUClusterQuotaList{}, &GPUBudget{}, &GPUBudgetList{}, &GPUClusterBudget{}, &GPUClusterBudgetList{})
	metav1.AddToGroupVersion(s, GroupVersion())
	return nil
}

// GPUUsage is a namespace's GPU usage as gpuadmit sees it: per managed
// resource what the namespace's pods use, what admitted pods not yet
// recorded hold, and the tightest limit; and conditions naming input
// gpuadmit cannot use. Only the elected replica writes it (the reservations
// the webhook replicas share are in the namespace's GPUReservationSet, so
// that no write of this summary ever makes an admission's write conflict);
// namespace users may read it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gpuadmit
// +kubebuilder:printcolumn:name="GPU",type=string,JSONPath=`.status.summary.gpu`,description="devices used/hard"
// +kubebuilder:printcolumn:name="GPUMEM",type=string,JSONPath=`.status.summary.gpumem`,description="memory used/hard, MiB"
// +kubebuilder:printcolumn:name="GPUCORES",type=string,JSONPath=`.status.summary.gpucores`,description="cores used/hard, percent of a device"
// +kubebuilder:printcolumn:name="FAMILIES",type=string,JSONPath=`.status.summary.families`,description="other device families: count and memory used/hard"
// +kubebuilder:printcolumn:name="CLAIMS",type=integer,JSONPath=`.status.summary.claims`,priority=1,description="ResourceClaims charged"
// +kubebuilder:printcolumn:name="USERS",type=string,JSONPath=`.status.users`,priority=1,description="per user: devices charged (largest first)"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GPUUsageSpec   `json:"spec,omitempty"`
	Status GPUUsageStatus `json:"status,omitempty"`
}

// GPUUsageSpec is empty: gpuadmit owns the object and nothing in it is set
// by users.
type GPUUsageSpec struct{}

// GPUUsageStatus is what gpuadmit writes: one elected replica writes the
// usage, summary and conditions (at most once a second per namespace, only
// when they changed).
type GPUUsageStatus struct {
	// Resources is the usage and limit of each managed resource, in the
	// order gpu, gpumem, gpucores.
	// +listType=map
	// +listMapKey=resource
	// +optional
	Resources []ResourceUsage `json:"resources,omitempty"`
	// Summary is "used/hard" per resource for the printer columns ("-" for
	// no limit).
	// +optional
	Summary Summary `json:"summary,omitempty"`
	// Conditions report input gpuadmit cannot use: QuotasValid (a
	// ResourceQuota value not enforced as written: a memory limit in bytes
	// or a value that is not whole, enforced rounded down, or a negative
	// one, which blocks), QuotasEnforced (a ResourceQuota limits. key of a
	// resource no governed device family has: nothing enforces it),
	// DemandResolved (pods whose memory percentage cannot be resolved:
	// their memory is not counted), PodsValid (pods with invalid GPU
	// requests), InputsTrusted (pods charged what their admission resolved,
	// above what an annotation edited after binding or a node's dropped
	// capacity now says).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// DeniedWorkloads are the namespace's workloads whose pods gpuadmit
	// denied lately (deniedworkload_types.go).
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=20
	// +optional
	DeniedWorkloads []DeniedWorkload `json:"deniedWorkloads,omitempty"`
	// Users is "user=devices" of the namespace's largest users (devices of
	// the first governed family charged to each user: used and reserved),
	// largest first, for the printer column (kubectl get gpuusage -o wide).
	// A pod's user is its verified requesting-user stamp, else its
	// controller's service account.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Users string `json:"users,omitempty"`
}

// ResourceUsage is one managed resource's usage in a namespace.
type ResourceUsage struct {
	// Resource is the extended resource name, e.g. nvidia.com/gpumem.
	Resource string `json:"resource"`
	// Used is the sum of the recorded pods' effective demands (memory in
	// MiB; the value each pod's lifecycle stage holds).
	Used int64 `json:"used"`
	// Reserved is what admitted pods not yet recorded hold.
	// +optional
	Reserved int64 `json:"reserved,omitempty"`
	// Hard is the tightest limit over the namespace's ResourceQuotas;
	// absent when none limits the resource.
	// +optional
	Hard *int64 `json:"hard,omitempty"`
	// ResourceQuota names the ResourceQuota that sets Hard.
	// +optional
	ResourceQuota string `json:"resourceQuota,omitempty"`
}

// Summary holds "used/hard" per resource, for kubectl get.
type Summary struct {
	GPU      string `json:"gpu,omitempty"`
	GPUMem   string `json:"gpumem,omitempty"`
	GPUCores string `json:"gpucores,omitempty"`
	// Families summarizes every other device family the namespace uses or
	// limits: "<family> <count used/hard>, <memory used/hard> MiB", joined
	// by "; ".
	Families string `json:"families,omitempty"`
	// Claims is the number of ResourceClaims of governed DeviceClasses
	// charged in the namespace (their devices are in the used values).
	// +optional
	Claims int32 `json:"claims,omitempty"`
}

// Condition types of a GPUUsage.
const (
	ConditionQuotasValid = "QuotasValid"
	// ConditionQuotasEnforced is False while a ResourceQuota of the
	// namespace limits a resource gpuadmit does not govern.
	ConditionQuotasEnforced = "QuotasEnforced"
	ConditionDemandResolved = "DemandResolved"
	ConditionPodsValid      = "PodsValid"
	ConditionInputsTrusted  = "InputsTrusted"
	// ConditionWithinLimits is False while the namespace's usage passes a
	// limit lowered (or created) under it.
	ConditionWithinLimits = "WithinLimits"
)

// GPUUsageList is a list of GPUUsage.
//
// +kubebuilder:object:root=true
type GPUUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUUsage `json:"items"`
}
