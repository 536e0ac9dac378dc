package manifest

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/workload"
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
	// APIVersion and Object are a workload's as written (empty for a Pod
	// or a ResourceClaim): the workload check reads its pod sets. A
	// command that splits a custom workload into its pod sets (one
	// Workload each) keeps Object on the first only.
	APIVersion string
	Object     json.RawMessage
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

// workloadOf reads the pod template and the pod count of a controller:
// pkg/workload's reading of the built-in kinds (the webhook's), a
// DaemonSet's template with one pod per eligible node.
func workloadOf(raw json.RawMessage, h header) (*Workload, error) {
	obj, err := workload.Decode(raw)
	if err != nil {
		return nil, err
	}
	k := daemonSet
	if h.Kind != "DaemonSet" {
		group, _, _ := strings.Cut(h.APIVersion, "/")
		if k = builtin(group, h.Kind); k == nil {
			return nil, fmt.Errorf("%s %s is not a workload gpuadmit reads", h.APIVersion, h.Kind)
		}
	}
	sets, err := k.PodSets(obj)
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("the pod template (%s) is missing", k.Templates[0].Path)
	}
	w, err := podOf(sets[0].Template)
	if err != nil {
		return nil, fmt.Errorf("pod template: %w", err)
	}
	w.Kind, w.Name, w.Namespace, w.Replicas = h.Kind, h.Metadata.Name, h.Metadata.Namespace, sets[0].Count
	if h.Kind == "DaemonSet" {
		w.Replicas = PerNode
	}
	w.APIVersion, w.Object = h.APIVersion, raw
	w.Pod.Name, w.Pod.Namespace, w.Pod.GenerateName = h.Metadata.Name, h.Metadata.Namespace, ""
	return w, nil
}

// daemonSet reads a DaemonSet's template (its count is per node).
var daemonSet = &workload.Kind{Group: "apps", Version: "v1", Kind: "DaemonSet", Templates: []workload.Template{{Path: workload.MustPath("spec.template")}}}

// builtin is pkg/workload's built-in kind of group and kind.
func builtin(group, kind string) *workload.Kind {
	for _, k := range workload.Builtins() {
		if k.Group == group && k.Kind == kind {
			return &k
		}
	}
	return nil
}
