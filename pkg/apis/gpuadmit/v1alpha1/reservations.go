package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// GPUReservationSet holds a namespace's open reservations: the pods
// admitted that the watches of every webhook replica have not recorded
// yet. Every replica reads it before deciding and writes it, with the
// object's resourceVersion (compare and swap), before it answers
// "allowed", so replicas never admit the same free MiB twice. Only the
// admission rounds and their tidy jobs write it (never the summary, which
// is in the namespace's GPUUsage): a write that conflicts lost to another
// reservation write. Only gpuadmit writes it; namespace users may read it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=gpuadmit
// +kubebuilder:printcolumn:name="RESERVATIONS",type=integer,JSONPath=`.status.reservationCount`
// +kubebuilder:printcolumn:name="WRITER",type=string,JSONPath=`.status.lastWrite.writer`,priority=1
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUReservationSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GPUReservationSetSpec   `json:"spec,omitempty"`
	Status GPUReservationSetStatus `json:"status,omitempty"`
}

// GPUReservationSetSpec is empty: gpuadmit owns the object and nothing in
// it is set by users.
type GPUReservationSetSpec struct{}

// GPUReservationSetStatus is what the admission rounds write, with the
// object's resourceVersion.
type GPUReservationSetStatus struct {
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
	// LastWrite names who wrote the object last and why (informational:
	// a replica whose write conflicted counts the conflict by this cause;
	// nothing is decided by it).
	// +optional
	LastWrite LastWrite `json:"lastWrite,omitempty"`
	// Gangs are the holds of the namespace's gangs: room held for the pods
	// of a gang still to come (GangHold), written in the same compare and
	// swap as the reservations.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=500
	// +optional
	Gangs []GangHold `json:"gangs,omitempty"`
	// Members are, in a team's object (TeamObjectName), the namespaces the
	// team counted at its last write: a namespace that is a member but no
	// longer selected has departed (Departures). Empty in a namespace's
	// own object.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Members []string `json:"members,omitempty"`
	// Departures are, in a team's object, the namespaces that left the
	// team's selection while charged to it: still counted, and still
	// decided against the team, until their pods end or the grace passes.
	// +listType=map
	// +listMapKey=namespace
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Departures []Departure `json:"departures,omitempty"`
}

// LastWrite names the last write of a GPUReservationSet.
type LastWrite struct {
	// Writer is the webhook replica that wrote.
	// +optional
	Writer string `json:"writer,omitempty"`
	// Cause is WriteAdmission (the write added a reservation) or WriteTidy
	// (it only marked, removed or restored reservations).
	// +optional
	Cause string `json:"cause,omitempty"`
}

// Causes of a GPUReservationSet write (LastWrite.Cause).
const (
	WriteAdmission = "admission"
	WriteTidy      = "tidy"
)

// Reservation holds the demand of one admitted pod (an entry of a
// GPUReservationSet).
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
	// Namespace is the pod's (or claim's) namespace, in a team's
	// GPUReservationSet (TeamObjectName), which holds the reservations of
	// every namespace the team selects; a namespace's own object leaves it
	// empty.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
	// User is who the pod is charged to (its requesting-user stamp, or its
	// controller's service account), for per-user limits; set in a team's
	// object, and in a namespace's (copied when the namespace joins a team).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	User string `json:"user,omitempty"`
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

// GPUReservationSetList is a list of GPUReservationSet.
//
// +kubebuilder:object:root=true
type GPUReservationSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUReservationSet `json:"items"`
}
