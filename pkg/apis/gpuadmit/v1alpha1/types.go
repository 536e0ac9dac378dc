package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// Group, Version and the resource of this API.
const (
	Group    = "gpuadmit.io"
	Version  = "v1alpha1"
	Resource = "gpuusages"
	// ObjectName is the name of the one GPUUsage of a namespace.
	ObjectName = "usage"
)

// GroupVersion is gpuadmit.io/v1alpha1.
func GroupVersion() schema.GroupVersion { return schema.GroupVersion{Group: Group, Version: Version} }

// AddToScheme registers GPUUsage and GPUUsageList.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion(), &GPUUsage{}, &GPUUsageList{})
	metav1.AddToGroupVersion(s, GroupVersion())
	return nil
}

// GPUUsage is a namespace's GPU usage as gpuadmit sees it: per managed
// resource what the namespace's pods use, what admitted pods not yet
// recorded hold, and the tightest limit; conditions naming input gpuadmit
// cannot use; and the reservations the webhook replicas share. Only
// gpuadmit writes it; namespace users may read it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gpuadmit
// +kubebuilder:printcolumn:name="GPU",type=string,JSONPath=`.status.summary.gpu`,description="devices used/hard"
// +kubebuilder:printcolumn:name="GPUMEM",type=string,JSONPath=`.status.summary.gpumem`,description="memory used/hard, MiB"
// +kubebuilder:printcolumn:name="GPUCORES",type=string,JSONPath=`.status.summary.gpucores`,description="cores used/hard, percent of a device"
// +kubebuilder:printcolumn:name="FAMILIES",type=string,JSONPath=`.status.summary.families`,description="other device families: count and memory used/hard"
// +kubebuilder:printcolumn:name="CLAIMS",type=integer,JSONPath=`.status.summary.claims`,priority=1,description="ResourceClaims charged"
// +kubebuilder:printcolumn:name="RESERVATIONS",type=integer,JSONPath=`.status.reservationCount`,priority=1
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

// GPUUsageStatus is what gpuadmit writes. The admission path writes the
// reservations (with the object's resourceVersion); one elected replica
// writes the usage, summary and conditions (at most once a second per
// namespace, only when they changed).
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
	// ResourceQuota value that is not a whole non-negative number),
	// DemandResolved (pods whose memory percentage cannot be resolved:
	// their memory is not counted), PodsValid (pods with invalid GPU
	// requests), InputsTrusted (pods charged what their admission resolved,
	// above what an annotation edited after binding or a node's dropped
	// capacity now says).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Reservations are the pods admitted that are not yet recorded by the
	// watches of every replica. A reservation never lapses on a timer: it
	// ends when every live replica recorded its pod, or when the API server
	// confirms the pod does not exist.
	// The list is atomic: only gpuadmit writes it, always whole, and
	// per-entry field ownership would make every write costlier.
	// +listType=atomic
	// +optional
	Reservations []Reservation `json:"reservations,omitempty"`
	// ReservationCount is len(Reservations), for the printer column.
	// +optional
	ReservationCount int32 `json:"reservationCount,omitempty"`
	// RemovedResourceVersion is the largest RecordedResourceVersion of a
	// reservation removed so far. A replica decides on this object only
	// once its pod watch reached it: a replica whose watch is further behind
	// (one the others did not know yet when they removed it) waits, or
	// refuses, rather than miss a pod no reservation covers any more.
	// +optional
	RemovedResourceVersion string `json:"removedResourceVersion,omitempty"`
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
	ConditionQuotasValid    = "QuotasValid"
	ConditionDemandResolved = "DemandResolved"
	ConditionPodsValid      = "PodsValid"
	ConditionInputsTrusted  = "InputsTrusted"
	// ConditionWithinLimits is False while the namespace's usage passes a
	// limit lowered (or created) under it.
	ConditionWithinLimits = "WithinLimits"
)

// Reservation holds the demand of one admitted pod.
type Reservation struct {
	// PodUID is the pod's UID (the API server sets it before validating
	// admission).
	PodUID types.UID `json:"podUID"`
	// PodName is the pod's name: absence is confirmed by reading it.
	// +optional
	PodName string `json:"podName,omitempty"`
	// ClaimName is set instead of PodName for a ResourceClaim's
	// reservation (PodUID is then the claim's UID). A claim's reservation
	// stays for as long as the claim exists: it ends when a read finds the
	// claim gone, never by the watches' progress.
	// +optional
	ClaimName string `json:"claimName,omitempty"`
	// Demand is the pod's effective demand (memory in MiB).
	Demand Demand `json:"demand"`
	// Families is the demand of the pod in every other device family
	// (Ascend, Hygon, ...), by family name; the nvidia family's is Demand.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Families map[string]Demand `json:"families,omitempty"`
	// Writer is the webhook replica that admitted the pod.
	Writer string `json:"writer"`
	// AdmittedAt is when, by the writer's clock (informational: replicas
	// schedule checks by their own clocks, so clock skew does not matter).
	AdmittedAt metav1.Time `json:"admittedAt"`
	// RecordedResourceVersion is the pod's resourceVersion when a replica's
	// watch recorded it. A replica whose pod watch has reached it no longer
	// counts the reservation (its ledger holds the pod, or saw it go); the
	// reservation is removed once every live replica's has.
	// +optional
	RecordedResourceVersion string `json:"recordedResourceVersion,omitempty"`
}

// Demand is an effective demand.
type Demand struct {
	// GPU is the number of devices.
	// +kubebuilder:validation:Minimum=0
	GPU int64 `json:"gpu"`
	// GPUMem is the memory in MiB.
	// +kubebuilder:validation:Minimum=0
	GPUMem int64 `json:"gpumem"`
	// GPUCores is the core percentage, summed over devices.
	// +kubebuilder:validation:Minimum=0
	GPUCores int64 `json:"gpucores"`
}

// GPUUsageList is a list of GPUUsage.
//
// +kubebuilder:object:root=true
type GPUUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUUsage `json:"items"`
}
