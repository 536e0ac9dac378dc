package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The resources of the budgets.
const (
	BudgetResource        = "gpubudgets"
	ClusterBudgetResource = "gpuclusterbudgets"
)

// Calendar windows of a budget.
const (
	WindowMonthly = "Monthly"
	WindowWeekly  = "Weekly"
	WindowDaily   = "Daily"
)

// Condition types of a budget.
const (
	// ConditionBudgetValid is False while the spec has a key gpuadmit
	// cannot enforce (no governed family has that resource name) or a
	// window it cannot compute (an unknown time zone): the message names
	// it. The other keys are enforced.
	ConditionBudgetValid = "Valid"
	// ConditionBudgetSpent is True while some resource's use in the
	// current window has reached its limit: new GPU pods that use it are
	// denied until the window ends.
	ConditionBudgetSpent = "Spent"
)

// GPUBudget limits what the GPU pods and claims of its namespace may burn
// in a window (a calendar month, week or day in a time zone, or a rolling
// duration): spec.hard in resource-hours (device-hours for a count
// resource, MiB-hours for memory, core-hours for cores, a core-hour being
// a percent of a device for an hour). Once a resource's use in the window
// reaches its limit, new GPU pods and claims using it are denied until the
// window ends; running pods are never stopped. Namespace admins write the
// spec; only gpuadmit's elected replica writes the status, which holds the
// checkpoint the accrual resumes from.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=gb,categories=gpuadmit
// +kubebuilder:printcolumn:name="WINDOW",type=string,JSONPath=`.status.window`,description="the window: Monthly/Weekly/Daily in a zone, or rolling"
// +kubebuilder:printcolumn:name="USED",type=string,JSONPath=`.status.summary`,description="used/hard resource-hours in the current window, per resource"
// +kubebuilder:printcolumn:name="PERCENT",type=integer,JSONPath=`.status.percent`,description="the highest used/hard of its resources, percent"
// +kubebuilder:printcolumn:name="ENDS",type=date,JSONPath=`.status.windowEnd`,description="when the current window ends"
// +kubebuilder:printcolumn:name="EXHAUSTED",type=string,JSONPath=`.status.projectedExhaustion`,priority=1,description="when the last hour's burn rate would spend it"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GPUBudgetSpec `json:"spec,omitempty"`
	// +optional
	Status BudgetStatus `json:"status,omitempty"`
}

// GPUBudgetSpec is a namespace's budget.
type GPUBudgetSpec struct {
	Window BudgetWindow `json:"window"`
	// Hard limits each resource's burn in the window, in resource-hours,
	// keyed by the resource's name as containers request it
	// (nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores, any
	// governed family's count, memory or core name); decimals are allowed
	// ("0.5"). DRA claims of governed DeviceClasses burn their family's
	// resources. A negative value is refused.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="a limit is 0 or more resource-hours: a negative value is refused"
	Hard corev1.ResourceList `json:"hard"`
}

// BudgetWindow is either a calendar window in a time zone or a rolling
// duration.
//
// +kubebuilder:validation:XValidation:rule="has(self.calendar) != has(self.rolling)",message="set exactly one of calendar and rolling"
// +kubebuilder:validation:XValidation:rule="!has(self.timeZone) || has(self.calendar)",message="timeZone goes with calendar"
type BudgetWindow struct {
	// Calendar is Monthly (from the first of the month), Weekly (from
	// Monday) or Daily, each from midnight in TimeZone.
	// +kubebuilder:validation:Enum=Monthly;Weekly;Daily
	// +optional
	Calendar string `json:"calendar,omitempty"`
	// TimeZone is an IANA zone name (Europe/Berlin); UTC when empty.
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
	// Rolling is the length of a window that ends now (between 1h and
	// 8784h); burn older than that no longer counts.
	// +optional
	Rolling *metav1.Duration `json:"rolling,omitempty"`
}

// BudgetStatus is what the elected replica writes, at most every
// budgets.checkpointInterval and at a window's end.
type BudgetStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Window describes the window for the printer column ("Monthly
	// Europe/Berlin", "rolling 720h").
	// +optional
	Window string `json:"window,omitempty"`
	// WindowStart and WindowEnd bound the current window (for a rolling
	// window: the checkpoint's time less the duration, and the checkpoint's
	// time).
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`
	// +optional
	WindowEnd *metav1.Time `json:"windowEnd,omitempty"`
	// Resources is each limited resource's use at the checkpoint.
	// +listType=map
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Resources []BudgetResourceStatus `json:"resources,omitempty"`
	// Percent is the highest used/hard of Resources, for the printer column.
	// +optional
	Percent int32 `json:"percent,omitempty"`
	// Summary is "used/hard" hours per resource, for the printer column.
	// +optional
	Summary string `json:"summary,omitempty"`
	// ProjectedExhaustion is the earliest time a resource would reach its
	// limit at the last hour's burn rate, when that is before the window
	// ends.
	// +optional
	ProjectedExhaustion *metav1.Time `json:"projectedExhaustion,omitempty"`
	// Checkpoint is what the accrual resumes from after a restart or a
	// change of the elected replica.
	// +optional
	Checkpoint *BudgetCheckpoint `json:"checkpoint,omitempty"`
	// Conditions: Valid, Spent.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BudgetResourceStatus is one limited resource's position in the window.
type BudgetResourceStatus struct {
	// Resource is the key of spec.hard.
	Resource corev1.ResourceName `json:"resource"`
	// Hard is the limit as enforced, in resource-hours.
	// +optional
	Hard resource.Quantity `json:"hard,omitempty"`
	// Used is the burn in the window up to the checkpoint, in
	// resource-hours.
	// +optional
	Used resource.Quantity `json:"used,omitempty"`
	// BurnRate is the burn of the last hour before the checkpoint, in
	// resource-hours per hour.
	// +optional
	BurnRate resource.Quantity `json:"burnRate,omitempty"`
	// ProjectedExhaustion is when Used would reach Hard at BurnRate, when
	// that is before the window ends.
	// +optional
	ProjectedExhaustion *metav1.Time `json:"projectedExhaustion,omitempty"`
}

// BudgetCheckpoint is the accrual's durable state. A budget's use at its
// time is Folded (the burn of pods and claims no longer counted live: deleted, or
// whose namespace left the budget) plus the burn in the window of every
// pod and claim still counted, computed from their own timestamps, each
// from its FoldedPods entry's Until when it has one.
type BudgetCheckpoint struct {
	// Time is when the elected replica computed it (its own clock).
	Time metav1.MicroTime `json:"time"`
	// Writer is the identity of the replica that wrote it.
	// +optional
	Writer string `json:"writer,omitempty"`
	// WindowStart is the start of the window Folded belongs to (a calendar
	// window's; for a rolling window Buckets hold the folded burn).
	// +optional
	WindowStart *metav1.Time `json:"windowStart,omitempty"`
	// Folded is the burn in the window of what is no longer counted live,
	// per resource, in unit-milliseconds.
	// +listType=map
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Folded []BudgetAmount `json:"folded,omitempty"`
	// Buckets hold a rolling window's folded burn by the time it burned,
	// oldest first (at most budgets.rollingBuckets + 1).
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Buckets []BudgetBucket `json:"buckets,omitempty"`
	// FoldedPods are the pods and claims whose burn up to Until is in
	// Folded (or Buckets): never counted again before Until.
	// +kubebuilder:validation:MaxItems=12000
	// +optional
	FoldedPods []FoldedPod `json:"foldedPods,omitempty"`
}

// BudgetAmount is a burn in unit-milliseconds (device-, MiB- or
// core-percent-milliseconds) of one resource.
type BudgetAmount struct {
	Resource         corev1.ResourceName `json:"resource"`
	UnitMilliseconds int64               `json:"unitMilliseconds"`
}

// BudgetBucket is the folded burn of one slice of a rolling window.
type BudgetBucket struct {
	Start metav1.Time `json:"start"`
	// +listType=map
	// +listMapKey=resource
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Amounts []BudgetAmount `json:"amounts,omitempty"`
}

// FoldedPod names a pod or claim whose burn up to Until is folded.
type FoldedPod struct {
	UID   string           `json:"uid"`
	Until metav1.MicroTime `json:"until"`
}

// GPUBudgetList is a list of GPUBudget.
//
// +kubebuilder:object:root=true
type GPUBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUBudget `json:"items"`
}

// GPUClusterBudget is a GPUBudget over the namespaces it selects together
// (a team's), selected as a GPUClusterQuota selects them. Cluster admins
// write the spec; only gpuadmit's elected replica writes the status.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=gcb,categories=gpuadmit
// +kubebuilder:printcolumn:name="WINDOW",type=string,JSONPath=`.status.window`,description="the window: Monthly/Weekly/Daily in a zone, or rolling"
// +kubebuilder:printcolumn:name="USED",type=string,JSONPath=`.status.summary`,description="used/hard resource-hours in the current window, per resource"
// +kubebuilder:printcolumn:name="PERCENT",type=integer,JSONPath=`.status.percent`,description="the highest used/hard of its resources, percent"
// +kubebuilder:printcolumn:name="ENDS",type=date,JSONPath=`.status.windowEnd`,description="when the current window ends"
// +kubebuilder:printcolumn:name="EXHAUSTED",type=string,JSONPath=`.status.projectedExhaustion`,priority=1,description="when the last hour's burn rate would spend it"
// +kubebuilder:printcolumn:name="AGE",type=date,JSONPath=`.metadata.creationTimestamp`
type GPUClusterBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GPUClusterBudgetSpec `json:"spec,omitempty"`
	// +optional
	Status BudgetStatus `json:"status,omitempty"`
}

// GPUClusterBudgetSpec selects namespaces and sets their budget together.
type GPUClusterBudgetSpec struct {
	// NamespaceSelector selects namespaces by their labels; a namespace
	// matched by it or named in Namespaces is selected.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// +listType=set
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	Namespaces []string     `json:"namespaces,omitempty"`
	Window     BudgetWindow `json:"window"`
	// Hard is as a GPUBudget's.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, type(self[k]) == string ? !self[k].startsWith('-') : self[k] >= 0)",message="a limit is 0 or more resource-hours: a negative value is refused"
	Hard corev1.ResourceList `json:"hard"`
}

// GPUClusterBudgetList is a list of GPUClusterBudget.
//
// +kubebuilder:object:root=true
type GPUClusterBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GPUClusterBudget `json:"items"`
}
