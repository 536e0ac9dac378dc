package v1alpha1

// Workloads configures the check of workloads when they are applied
// (Deployments, Jobs... and the custom kinds listed): their pods' demand as a
// whole against the namespace's limits.
type Workloads struct {
	// Enforcement: what to do with a workload whose pods' demand passes a
	// hard limit of its namespace (it can never run whole): Deny (default)
	// or Warn.
	Enforcement *WorkloadEnforcement `json:"enforcement,omitempty"`
	// Kinds are the custom kinds whose pod templates are read, and the
	// identities controllers create pods as. Omitted, the shipped list
	// (JobSet, LeaderWorkerSet, RayCluster, RayJob, Kubeflow's jobs); an
	// empty list: none. Deployments, ReplicaSets, StatefulSets, Jobs and
	// CronJobs are always known; an entry naming one may only set its
	// podCreator.
	Kinds []WorkloadKind `json:"kinds"`
}

// WorkloadEnforcement is Workloads.Enforcement.
type WorkloadEnforcement string

// Values of Workloads.Enforcement.
const (
	WorkloadEnforcementDeny WorkloadEnforcement = "Deny"
	WorkloadEnforcementWarn WorkloadEnforcement = "Warn"
)

// WorkloadKind is one kind of workload.
type WorkloadKind struct {
	Group   string `json:"group"`
	Version string `json:"version"`
	Kind    string `json:"kind"`
	// Resource is the kind's plural resource name, as its
	// CustomResourceDefinition's spec.names.plural (rayclusters): the
	// resource the webhook's rules and RBAC name, and a scale review's.
	// Required for a custom kind (a DNS label); a built-in kind's is known.
	Resource string `json:"resource,omitempty"`
	// Templates are the kind's pod templates.
	Templates []WorkloadTemplate `json:"templates,omitempty"`
	// ScaleReplicasPath is where the scale subresource writes the
	// replicas (spec.replicas); empty: the kind's scale reviews are
	// refused unless they shrink.
	ScaleReplicasPath string `json:"scaleReplicasPath,omitempty"`
	// PodCreator is the identity the kind's controller creates its pods
	// as (`gpuadmit eval` decides the pods as that user).
	PodCreator *PodCreator `json:"podCreator,omitempty"`
}

// WorkloadTemplate is one pod template of a kind: a path to an object with
// metadata and spec, in dotted field names and [*] (every item of a list,
// every value of a map).
type WorkloadTemplate struct {
	// Path is the template's, e.g. spec.replicatedJobs[*].template.spec.template.
	Path string `json:"path"`
	// Fallback is read where Path matches nothing (optional).
	Fallback string `json:"fallback,omitempty"`
	// Replicas are the counts multiplied into the template's pod count
	// (none: one pod). Their [*] take the template's indexes.
	Replicas []WorkloadReplicas `json:"replicas,omitempty"`
}

// WorkloadReplicas is one count of a template's pod count.
type WorkloadReplicas struct {
	// Path is the count's, e.g. spec.replicatedJobs[*].replicas.
	Path string `json:"path"`
	// Default is the count where the path matches nothing (default 1).
	Default *int64 `json:"default,omitempty"`
	// Offset is added to the count (-1: a LeaderWorkerSet's size counts
	// its leader).
	Offset int64 `json:"offset,omitempty"`
	// AtLeast is a path (at the template's indexes) whose value, where
	// the object has one, the count is raised to (a KubeRay worker
	// group's minReplicas); optional. A value there that is no count
	// refuses the workload.
	AtLeast string `json:"atLeast,omitempty"`
	// AtMost is a path whose value, where the object has one, the count
	// is lowered to after AtLeast (a KubeRay worker group's maxReplicas,
	// a Job's completions); optional.
	AtMost string `json:"atMost,omitempty"`
}

// PodCreator is a username and its groups.
type PodCreator struct {
	Username string   `json:"username"`
	Groups   []string `json:"groups,omitempty"`
}
