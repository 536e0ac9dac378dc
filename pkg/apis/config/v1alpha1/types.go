package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Configuration is gpuadmit's configuration.
//
// +kubebuilder:object:root=true
type Configuration struct {
	metav1.TypeMeta `json:",inline"`

	// Devices is HAMi's device config: how a container's request is read
	// (resource names, defaults, memory factor).
	Devices *Devices `json:"devices,omitempty"`
	// Admission tunes decisions and reservations.
	Admission *Admission `json:"admission,omitempty"`
	// Policy says where operators' Rego policies come from.
	Policy *Policy `json:"policy,omitempty"`
	// ClientConnection tunes the webhook's API server client.
	ClientConnection *ClientConnection `json:"clientConnection,omitempty"`
	// DRA says which DeviceClasses' ResourceClaims are charged, and how.
	DRA *DRA `json:"dra,omitempty"`
	// Audit says how namespaces over a lowered limit are reported.
	Audit *Audit `json:"audit,omitempty"`
	// Capacity bounds the device capacity nodes may announce.
	Capacity *Capacity `json:"capacity,omitempty"`
	// Workloads configures the check of workloads when they are applied.
	Workloads *Workloads `json:"workloads,omitempty"`
	// Teams tune the team quotas (teams.go).
	Teams *Teams `json:"teams,omitempty"`
	// Budgets tune the GPU-hour budgets (budgets.go).
	Budgets *Budgets `json:"budgets,omitempty"`
}

// Admission tunes decisions and reservations.
type Admission struct {
	// NearLimitPercent: warn when a namespace reaches this share of a
	// limit after the pod (default 90; 0: never warn).
	NearLimitPercent *int64 `json:"nearLimitPercent,omitempty"`
	// Unsatisfiable: what to do with a device request no eligible node can
	// hold: Deny (default) or Warn.
	Unsatisfiable *UnsatisfiablePolicy `json:"unsatisfiable,omitempty"`
	// PolicyEvaluationTimeout bounds one policy evaluation (default 1s).
	PolicyEvaluationTimeout *metav1.Duration `json:"policyEvaluationTimeout,omitempty"`
	// ReviewTimeout bounds one review, waiting for earlier decisions in
	// the namespace and writing the reservation included; keep it below
	// the webhook configurations' timeoutSeconds (default 8s).
	ReviewTimeout *metav1.Duration `json:"reviewTimeout,omitempty"`
	// StaleFeed: what the webhook does while a watch is stale:
	// Reservations (default: keep deciding, admitted pods stay reserved)
	// or Deny (refuse GPU pods and fail readiness).
	StaleFeed *StaleFeedPolicy `json:"staleFeed,omitempty"`
	// Reservations: how the absence of an admitted pod is confirmed.
	Reservations *Reservations `json:"reservations,omitempty"`
	// Watches: when a watch counts as stale.
	Watches *Watches `json:"watches,omitempty"`
	// Gangs: how gangs are admitted whole (gangs.go).
	Gangs *Gangs `json:"gangs,omitempty"`
}

// UnsatisfiablePolicy is Admission.Unsatisfiable.
type UnsatisfiablePolicy string

// Values of Admission.Unsatisfiable.
const (
	UnsatisfiableDeny UnsatisfiablePolicy = "Deny"
	UnsatisfiableWarn UnsatisfiablePolicy = "Warn"
)

// StaleFeedPolicy is Admission.StaleFeed.
type StaleFeedPolicy string

// Values of Admission.StaleFeed.
const (
	StaleFeedReservations StaleFeedPolicy = "Reservations"
	StaleFeedDeny         StaleFeedPolicy = "Deny"
)

// Reservations tune the confirmation of reservations.
type Reservations struct {
	// ConfirmAfter: an admitted pod no replica recorded is first read by
	// name this long after this replica first saw its reservation (default
	// 0s: the longest timeoutSeconds of the cluster's other validating
	// webhooks on pod creates, plus 2s).
	ConfirmAfter *metav1.Duration `json:"confirmAfter,omitempty"`
	// RecheckMax bounds the backoff between reads of a pod the watch has
	// not recorded yet (default 30s).
	RecheckMax *metav1.Duration `json:"recheckMax,omitempty"`
	// ReadsPerSecond bounds those reads (default 20).
	ReadsPerSecond *int32 `json:"readsPerSecond,omitempty"`
	// MaxPerNamespace bounds the reservations one namespace's GPUUsage
	// holds (default 500); an admission that would add one more is
	// refused until some end.
	MaxPerNamespace *int32 `json:"maxPerNamespace,omitempty"`
}

// Watches tune the staleness check.
type Watches struct {
	// ProbeEvery: how often the API server's resourceVersion is read
	// (default 15s).
	ProbeEvery *metav1.Duration `json:"probeEvery,omitempty"`
	// StaleAfter: a watch that has not caught up for this long is stale
	// (default 3m).
	StaleAfter *metav1.Duration `json:"staleAfter,omitempty"`
}

// Policy is where operators' policies come from.
type Policy struct {
	// ConfigMapSelector selects policy ConfigMaps in the server's
	// namespace (default "gpuadmit.io/policy=true").
	ConfigMapSelector *string `json:"configMapSelector,omitempty"`
	// Directory adds the Rego modules of a directory (default none).
	Directory *string `json:"directory,omitempty"`
	// MemoryBudgetMiB bounds how much the live heap may grow while a
	// policy set's tests run, and while an evaluation that runs past 20 ms
	// runs (default 64).
	MemoryBudgetMiB *int32 `json:"memoryBudgetMiB,omitempty"`
}

// ClientConnection tunes the webhook's client of the API server. Every
// allowed GPU pod costs a write (its reservation): client-side throttling
// must not queue reviews (the API server's priority and fairness protects
// it).
type ClientConnection struct {
	// QPS is the client's steady rate of requests (default 500).
	QPS *float32 `json:"qps,omitempty"`
	// Burst is the client's burst of requests (default 1000).
	Burst *int32 `json:"burst,omitempty"`
}
