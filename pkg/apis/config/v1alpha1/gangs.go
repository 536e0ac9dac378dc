package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Gangs tune how gangs are admitted whole (admission.gangs): a gang's
// first admitted pod holds room for the rest of the gang in the namespace's
// GPUReservationSet.
type Gangs struct {
	// HoldTimeout: a gang's hold that still holds room for pods that have
	// not come this long after a replica first saw it is released by that
	// replica (its own clock), with a Warning Event (default 5m; 1s..24h).
	HoldTimeout *metav1.Duration `json:"holdTimeout,omitempty"`
}
