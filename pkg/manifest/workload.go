package manifest

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
)

// Workload is a Pod, or the pod template of a workload controller, with the
// number of pods the object makes; or a ResourceClaim.
type Workload struct {
	// Kind is Pod, Deployment, StatefulSet, ReplicaSet, DaemonSet, Job,
	// CronJob or ResourceClaim.
	Kind      string
	Name      string
	Namespace string
	// Replicas is how many pods the object makes: 1 for a Pod;
	// spec.replicas (default 1) of a Deployment, StatefulSet or ReplicaSet;
	// spec.parallelism (default 1) of a Job or of a CronJob's job template;
	// -1 for a DaemonSet, which makes one pod per eligible node (the caller
	// counts the nodes).
	Replicas int64
	// Pod is the Pod, or a pod made from the template: named after the
	// object, in the object's namespace. It is nil for a ResourceClaim.
	Pod *corev1.Pod
	// Claim is the ResourceClaim of a workload of kind ResourceClaim (nil
	// for the others): its CREATE is what is decided.
	Claim *resourcev1.ResourceClaim
	// Source is where the object was read: its file and document
	// ("pods.yaml (document 2)"; "standard input (document 1)").
	Source string
	// written are the container quantities as the manifest wrote them.
	written map[quantityKey]string
}

// PerNode is the Replicas of a DaemonSet: one pod per eligible node.
const PerNode = -1

type quantityKey struct{ container, source, resource string }

// Written returns a container quantity as the manifest wrote it ("1.0",
// "  5") rather than in the canonical form the API server stores; source
// is "limits" or "requests".
func (w *Workload) Written(container, source, resource string) (string, bool) {
	v, ok := w.written[quantityKey{container, source, resource}]
	return v, ok
}

// workloadKind reports the controllers whose pod templates are read.
func workloadKind(apiVersion, kind string) bool {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment", "apps/v1 StatefulSet", "apps/v1 ReplicaSet", "apps/v1 DaemonSet", "batch/v1 Job", "batch/v1 CronJob":
		return true
	}
	return false
}

type podTemplate struct {
	Metadata json.RawMessage `json:"metadata"`
	Spec     json.RawMessage `json:"spec"`
}

// workloadOf reads the pod template and the pod count of a controller.
func workloadOf(raw json.RawMessage, h header) (*Workload, error) {
	var obj struct {
		Spec struct {
			Replicas    *int64       `json:"replicas"`
			Parallelism *int64       `json:"parallelism"`
			Template    *podTemplate `json:"template"`
			JobTemplate *struct {
				Spec struct {
					Parallelism *int64       `json:"parallelism"`
					Template    *podTemplate `json:"template"`
				} `json:"spec"`
			} `json:"jobTemplate"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	spec := obj.Spec
	tmpl, count := spec.Template, spec.Replicas
	switch h.Kind {
	case "Job":
		count = spec.Parallelism
	case "CronJob":
		if spec.JobTemplate == nil {
			return nil, fmt.Errorf("spec.jobTemplate is missing")
		}
		tmpl, count = spec.JobTemplate.Spec.Template, spec.JobTemplate.Spec.Parallelism
	}
	if tmpl == nil || len(tmpl.Spec) == 0 {
		return nil, fmt.Errorf("the pod template (spec.template) is missing")
	}
	replicas := int64(1)
	switch {
	case h.Kind == "DaemonSet":
		replicas = PerNode
	case count != nil && *count < 0:
		return nil, fmt.Errorf("negative pod count %d", *count)
	case count != nil:
		replicas = *count
	}
	meta := tmpl.Metadata
	if len(meta) == 0 || string(meta) == "null" {
		meta = json.RawMessage("{}")
	}
	podRaw, err := json.Marshal(map[string]json.RawMessage{"apiVersion": json.RawMessage(`"v1"`), "kind": json.RawMessage(`"Pod"`),
		"metadata": meta, "spec": tmpl.Spec})
	if err != nil {
		return nil, err
	}
	w, err := podOf(podRaw)
	if err != nil {
		return nil, fmt.Errorf("pod template: %w", err)
	}
	w.Kind, w.Name, w.Namespace, w.Replicas = h.Kind, h.Metadata.Name, h.Metadata.Namespace, replicas
	w.Pod.Name, w.Pod.Namespace, w.Pod.GenerateName = h.Metadata.Name, h.Metadata.Namespace, ""
	return w, nil
}
