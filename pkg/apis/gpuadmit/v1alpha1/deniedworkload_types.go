package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MaxDeniedWorkloads bounds GPUUsage's status.deniedWorkloads: the most
// recently denied first.
const MaxDeniedWorkloads = 20

// DeniedWorkload is a workload of the namespace whose pods gpuadmit denied
// lately, as the denials' Warning Events tell (a Deployment, not its
// ReplicaSets; a CronJob, not its Jobs). It is informational only: it is
// read from Events, which any namespace user allowed to create Events can
// write, and nothing gpuadmit decides reads it.
type DeniedWorkload struct {
	// APIVersion and Kind of the workload, e.g. apps/v1 Deployment.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name of the workload.
	Name string `json:"name"`
	// LastDenied is when the last denial was recorded.
	LastDenied metav1.Time `json:"lastDenied"`
	// Reason is the last denial's: GPUQuotaExceeded or GPUPolicyDenied.
	Reason string `json:"reason"`
	// Message is the last denial's.
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message"`
	// Count is how many denials the Events counted (at least; client-go
	// folds and rate-limits Events).
	Count int32 `json:"count"`
}
