package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Teams tune the team quotas (GPUClusterQuota).
type Teams struct {
	// LeaveGrace: a namespace that left a team's selection while charged
	// to it stays counted for the team, and its new pods decided against
	// the team, until its GPU pods and reservations end, or this long
	// after a replica first saw it leave (that replica's own clock)
	// (default 10m; 1s..24h).
	LeaveGrace *metav1.Duration `json:"leaveGrace,omitempty"`
}
