package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterQuotaResource is the resource of the GPUClusterQuotas.
const ClusterQuotaResource = "gpuclusterquotas"

// TeamObjectPrefix starts the name of a team's GPUReservationSet (in
// gpuadmit's own namespace): TeamObjectPrefix + the GPUClusterQuota's name.
const TeamObjectPrefix = "gcq."

// TeamObjectName is the name of the GPUReservationSet that holds the
// reservations of the team quota named quota.
func TeamObjectName(quota string) string { return TeamObjectPrefix + quota }

// GPUClusterQuota limits the GPU demand of a team: the namespaces it
// selects together (Hard), and each user within them (PerUser). A pod or
// claim in a selected namespace is admitted only when it fits its
// namespace's own quotas and every GPUClusterQuota that selects the
// namespace. Cluster admins write the spec; only gpuadmit's elected replica
// writes the status. The reservations of the team's admitted pods that the
// watches have not recorded yet are in the GPUReservationSet
// TeamObjectName(name) of gpuadmit's namespace, written with compare and
// swap like a namespace's.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gcq,categories=gpuadmit
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 240",message="a GPUClusterQuota's name is at most 240 characters (its reservations are held in the GPUReservationSet gcq.<name>)"
// +kubebuilder:printcolumn:name="NAMESPACES",type=integer,JSONPath=`.status.namespaceCount`,description="namespaces selected"
// +kubebuilder:printcolumn:name="GPU",type=string,JSONPath=`.status.summary.gpu`,description="devices used/hard, the team's namespaces together"
// +kubebuilder:printcolumn:name="GPUMEM",type=string,JSONPath=`.status.summary.gpumem`,description="memory used/hard, MiB"
// +kubebuilder:printcolumn:name="GPUCORES",type=string,JSONPath=`.status.summary.gpucores`,description="cores used/hard, percent of a device"
// +kubebuilder:printcolumn:name="FAMILIES",type=string,JSONPath=`.status.summary.families`,priority=1,description="other device families: count and memory used/hard"
// +kubebuilder:printcolumn:name="USERS",type=string,JSONPath=`.status.users`,priority=1,description="per user: devices used (largest first)"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUClusterQuota struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GPUClusterQuotaSpec `json:"spec,omitempty"`
	// +optional
	Status GPUClusterQuotaStatus `json:"status,omitempty"`
}

// GPUClusterQuotaSpec selects a team's namespaces and sets its limits.
type GPUClusterQuotaSpec struct {
	// NamespaceSelector selects namespaces by their labels. A namespace
	// matched by NamespaceSelector or named in Namespaces is selected.
	// Whoever may write a namespace's labels may move it into or out of
	// the team (a namespace that leaves stays charged for the grace,
	// teams.leaveGrace).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Namespaces names namespaces selected whatever their labels.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// Hard limits the team's namespaces together, with ResourceQuota's
	// keys: limits.<count, memory or core resource name> of every governed
	// device family (DRA claims of governed DeviceClasses included).
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// PerUser limits each user's charges across the team's namespaces
	// (same keys as Hard). A pod's user is its requesting-user stamp,
	// written by gpuadmit's mutating webhook.
	// +optional
	PerUser corev1.ResourceList `json:"perUser,omitempty"`
}

// GPUClusterQuotaStatus is what the elected replica writes.
type GPUClusterQuotaStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Hard is the spec's Hard as enforced.
	// +optional
	Hard corev1.ResourceList `json:"hard,omitempty"`
	// Used is the team's recorded usage, keyed like Hard (memory in Mi).
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// Reserved is what the team's admitted pods not yet recorded hold.
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
	// NamespaceCount is len(Namespaces), for the printer column.
	// +optional
	NamespaceCount int32 `json:"namespaceCount,omitempty"`
	// Namespaces is the usage of each namespace counted, by name.
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Namespaces []TeamNamespaceUsage `json:"namespaces,omitempty"`
	// UserUsage is the usage of each user charged in the team's
	// namespaces, largest first (at most 100 users).
	// +listType=map
	// +listMapKey=user
	// +kubebuilder:validation:MaxItems=100
	// +optional
	UserUsage []TeamUserUsage `json:"userUsage,omitempty"`
	// Users is "user=devices" of the largest users, for the printer column.
	// +optional
	Users string `json:"users,omitempty"`
	// Summary is "used/hard" per resource for the printer columns.
	// +optional
	Summary Summary `json:"summary,omitempty"`
	// Conditions: Valid (the spec is enforced as written: no key of a
	// resource no governed family has, no value that is not whole),
	// WithinLimits (False while the team's usage passes a limit lowered or
	// created under it).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TeamNamespaceUsage is one namespace's part of a team's usage.
type TeamNamespaceUsage struct {
	Namespace string `json:"namespace"`
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
	// Departing: the namespace left the team's selection while charged; it
	// is counted until its pods end or the grace passes.
	// +optional
	Departing bool `json:"departing,omitempty"`
}

// TeamUserUsage is one user's charges in a team's namespaces.
type TeamUserUsage struct {
	User string `json:"user"`
	// +optional
	Used corev1.ResourceList `json:"used,omitempty"`
	// +optional
	Reserved corev1.ResourceList `json:"reserved,omitempty"`
}

// GPUClusterQuotaList is a list of GPUClusterQuota.
//
// +kubebuilder:object:root=true
type GPUClusterQuotaList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUClusterQuota `json:"items"`
}

// Departure is a namespace that left a team's selection while it was
// charged to the team (a team's GPUReservationSet lists them): it stays a
// member until its GPU pods and reservations end, or until the grace
// (teams.leaveGrace) passed since each replica first saw the departure,
// on that replica's clock.
type Departure struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace"`
	// NoticedBy is the replica that wrote the departure first; NoticedAt
	// when, by its clock (informational).
	// +optional
	NoticedBy string `json:"noticedBy,omitempty"`
	// +optional
	NoticedAt metav1.Time `json:"noticedAt,omitempty"`
}
