package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Kinds of a gang (GangHold.Kind).
const (
	// GangPodGroup: the pods name a PodGroup (scheduling.k8s.io/v1beta1)
	// with a gang policy in spec.schedulingGroup.podGroupName.
	GangPodGroup = "PodGroup"
	// GangOptIn: the pods carry the annotations gpuadmit.io/gang and
	// gpuadmit.io/gang-min-count.
	GangOptIn = "Annotation"
)

// MaxGangMinCount bounds a gang's minCount as gpuadmit reads it (a larger
// one is denied: its hold could never fit a namespace's limit anyway).
const MaxGangMinCount = 10000

// GangHold is the room a gang's first admitted pod holds for the pods of
// the gang still to come: Slots pods of Demand each. Every replica counts
// a hold's Slots x Demand as reserved; each later pod of the gang that is
// admitted consumes one slot in the same write that reserves it. A hold
// whose slots are all consumed or that was released stays, with no slots,
// while its PodGroup exists (an annotation gang's: for the hold timeout),
// so that the gang's later pods are ordinary pods rather than a new gang.
type GangHold struct {
	// Kind is PodGroup or Annotation.
	// +kubebuilder:validation:Enum=PodGroup;Annotation
	Kind string `json:"kind"`
	// Name is the PodGroup's name, or the gpuadmit.io/gang annotation's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// PodGroupUID is the PodGroup's UID (a PodGroup re-created under the
	// same name is another gang).
	// +optional
	PodGroupUID types.UID `json:"podGroupUID,omitempty"`
	// MinCount is the gang's size when its first pod was admitted.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10000
	MinCount int32 `json:"minCount"`
	// Slots is how many pods of the gang the hold still holds room for.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=9999
	Slots int32 `json:"slots"`
	// Demand is one slot's demand (the first pod's, nvidia family).
	Demand Demand `json:"demand"`
	// Families is one slot's demand in every other device family.
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Families map[string]Demand `json:"families,omitempty"`
	// Pods are the UIDs of the gang's pods admitted against the hold, the
	// first pod's first.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10000
	Pods []types.UID `json:"pods"`
	// FirstPod is the first admitted pod's name (an annotation gang's
	// Events are about it).
	// +optional
	FirstPod string `json:"firstPod,omitempty"`
	// Writer is the webhook replica that admitted the first pod.
	Writer string `json:"writer"`
	// HeldSince is when, by the writer's clock (informational: the hold
	// timeout runs on the tidying replica's own clock, from when it first
	// saw the hold).
	HeldSince metav1.Time `json:"heldSince"`
	// Ended says why the hold holds nothing any more: Consumed, Released
	// (the hold timeout passed), Absent (its pods were never created) or
	// Lowered (the PodGroup's minCount was lowered to what was admitted).
	// +optional
	Ended string `json:"ended,omitempty"`
}

// Reasons a gang's hold ended (GangHold.Ended).
const (
	GangConsumed = "Consumed"
	GangReleased = "Released"
	GangAbsent   = "Absent"
	GangLowered  = "Lowered"
)
