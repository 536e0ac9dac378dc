package gang

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// The opt-in annotations of a gang's pods (on the pod template).
const (
	NameAnnotation     = "gpuadmit.io/gang"
	MinCountAnnotation = "gpuadmit.io/gang-min-count"
)

// MaxMinCount bounds a gang's minCount (a larger one is denied).
const MaxMinCount = gpuadmitv1.MaxGangMinCount

// Member is the gang a pod belongs to; the zero Member is none (an
// ordinary pod).
type Member struct {
	// Kind is gpuadmitv1.GangPodGroup or gpuadmitv1.GangOptIn.
	Kind string
	// Namespace and Name name the gang (the PodGroup, or the annotation's
	// value) in the pod's namespace.
	Namespace, Name string
	// UID is the PodGroup's ("" for an annotation gang).
	UID types.UID
	// MinCount is the gang's size, 2..MaxMinCount.
	MinCount int32
}

// IsZero reports whether m is no gang.
func (m Member) IsZero() bool { return m.Kind == "" }

// String names the gang in messages: "gang ns/name".
func (m Member) String() string { return "gang " + m.Namespace + "/" + m.Name }

// Matches reports whether hold h is m's gang's (same kind and name, and,
// for a PodGroup, the same PodGroup: one re-created under the name is
// another gang).
func (m Member) Matches(h gpuadmitv1.GangHold) bool {
	return h.Kind == m.Kind && h.Name == m.Name && (m.Kind != gpuadmitv1.GangPodGroup || h.PodGroupUID == m.UID)
}

// Group is what gpuadmit reads of a PodGroup.
type Group struct {
	Namespace, Name string
	UID             types.UID
	// MinCount is the gang policy's minCount; 0 when the PodGroup has no
	// gang policy (Basic).
	MinCount int32
	// Deleting: the PodGroup is being deleted (it waits for its pods to
	// go); its gang has ended.
	Deleting bool
}

// Lookup finds PodGroups (*Groups).
type Lookup interface {
	// Get returns namespace ns's PodGroup name; false when there is none.
	// An error says the PodGroups cannot be read (the API is not served,
	// or the informer has not synced).
	Get(ns, name string) (Group, bool, error)
}

// Of returns the gang pod belongs to (namespace ns), or an error naming
// what is wrong with the pod's gang (a denial). groups may be nil when
// the PodGroup API is not served.
func Of(pod *corev1.Pod, ns string, groups Lookup) (Member, error) {
	group := ""
	if sg := pod.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil {
		group = *sg.PodGroupName
	}
	name, hasName := pod.Annotations[NameAnnotation]
	count, hasCount := pod.Annotations[MinCountAnnotation]
	switch {
	case group != "" && (hasName || hasCount):
		return Member{}, fmt.Errorf("pod %s/%s names PodGroup %q in spec.schedulingGroup.podGroupName and carries the annotation %s or %s: a pod belongs to one gang; remove the annotations",
			ns, pod.Name, group, NameAnnotation, MinCountAnnotation)
	case group != "":
		return ofGroup(pod, ns, group, groups)
	case hasName || hasCount:
		return ofAnnotations(pod, ns, name, hasName, count, hasCount)
	}
	return Member{}, nil
}

// ofGroup is the gang of a pod naming PodGroup name.
func ofGroup(pod *corev1.Pod, ns, name string, groups Lookup) (Member, error) {
	if groups == nil {
		return Member{}, fmt.Errorf("pod %s/%s names PodGroup %q, but gpuadmit does not read PodGroups (the API server did not serve scheduling.k8s.io/v1beta1 podgroups when gpuadmit started): it cannot admit the gang whole, so the pod is refused",
			ns, pod.Name, name)
	}
	g, ok, err := groups.Get(ns, name)
	switch {
	case err != nil:
		return Member{}, fmt.Errorf("pod %s/%s names PodGroup %q: %w", ns, pod.Name, name, err)
	case !ok:
		return Member{}, fmt.Errorf("pod %s/%s names PodGroup %s/%s, which does not exist (yet): gpuadmit admits a gang whole once it knows its minCount; create the PodGroup first, then create the pod again",
			ns, pod.Name, ns, name)
	case g.Deleting:
		return Member{}, fmt.Errorf("pod %s/%s names PodGroup %s/%s, which is being deleted: its gang has ended; create the PodGroup again, then the pod",
			ns, pod.Name, ns, name)
	case g.MinCount > MaxMinCount:
		return Member{}, fmt.Errorf("pod %s/%s: PodGroup %s/%s's gang minCount %d is more than %d pods: such a gang is refused",
			ns, pod.Name, ns, name, g.MinCount, MaxMinCount)
	case g.MinCount < 2:
		return Member{}, nil // Basic, or a gang of one: an ordinary pod
	}
	return Member{Kind: gpuadmitv1.GangPodGroup, Namespace: ns, Name: name, UID: g.UID, MinCount: g.MinCount}, nil
}

// ofAnnotations is the gang of a pod carrying the opt-in annotations.
func ofAnnotations(pod *corev1.Pod, ns, name string, hasName bool, count string, hasCount bool) (Member, error) {
	where := fmt.Sprintf("pod %s/%s", ns, pod.Name)
	switch {
	case !hasName:
		return Member{}, fmt.Errorf("%s carries %s but not %s: a gang needs both (its name and its size)", where, MinCountAnnotation, NameAnnotation)
	case !hasCount:
		return Member{}, fmt.Errorf("%s carries %s but not %s: a gang needs both (its name and its size)", where, NameAnnotation, MinCountAnnotation)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return Member{}, fmt.Errorf("%s: annotation %s=%q is not a valid gang name: %s", where, NameAnnotation, name, strings.Join(errs, "; "))
	}
	n, err := strconv.ParseInt(strings.TrimSpace(count), 10, 32)
	switch {
	case err != nil || strings.TrimSpace(count) != count:
		return Member{}, fmt.Errorf("%s: annotation %s=%q is not a whole number of pods", where, MinCountAnnotation, count)
	case n < 1:
		return Member{}, fmt.Errorf("%s: annotation %s=%q: a gang has at least 1 pod", where, MinCountAnnotation, count)
	case n > MaxMinCount:
		return Member{}, fmt.Errorf("%s: annotation %s=%q is more than %d pods: such a gang is refused", where, MinCountAnnotation, count, MaxMinCount)
	case n == 1:
		return Member{}, nil // a gang of one is an ordinary pod
	}
	return Member{Kind: gpuadmitv1.GangOptIn, Namespace: ns, Name: name, MinCount: int32(n)}, nil
}
