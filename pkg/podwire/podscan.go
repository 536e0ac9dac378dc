package podwire

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Most pods of a cluster name no managed resource: PodTransform makes each
// the PartialObjectMetadata of its identity. decode finds them by scanning
// the bytes of their containers' resource names (nothing is allocated, no
// quantity parsed, the status never read) and reads only their identity;
// the others (GPU pods, pods with resource claims) are skimmed into a
// reused Pod and slimmed. Either way the result is PodTransform of the pod
// decoded whole (podskim_prop_test.go).

// decode returns PodTransform of the Pod message b: a
// *metav1.PartialObjectMetadata or a slimmed *corev1.Pod.
func (s *podSkimmer) decode(b []byte) (runtime.Object, error) {
	plain, err := s.namesNoManaged(b)
	if err != nil {
		return nil, err
	}
	if plain {
		m, err := s.plainMeta(b)
		if err != nil {
			return nil, err
		}
		return podMeta(m), nil
	}
	sc, _ := s.scratch.Get().(*podScratch)
	defer s.scratch.Put(sc)
	p := sc.reset()
	err = s.pod(b, p)
	sc.settle()
	if err != nil {
		return nil, err
	}
	return s.slim.slim(p), nil
}

// plainMeta reads the identity of the Pod message b as bookmarkMeta keeps
// it: the initial-events annotation only on an object without a name (read
// in a second pass, for a bookmark alone: a pod's is never copied).
func (s *podSkimmer) plainMeta(b []byte) (metav1.ObjectMeta, error) {
	var m metav1.ObjectMeta
	if err := s.metaOnly(b, &m, nil); err != nil || m.Name != "" {
		return m, err
	}
	return m, s.metaOnly(b, &m, s.bookmark)
}

// errManaged stops a scan at the first managed resource name.
var errManaged = errors.New("names a managed resource")

// namesNoManaged reports whether the Pod message b has no resource claim
// and no container (init or app) whose limits or requests name a managed
// resource: whether PodTransform makes it a PartialObjectMetadata
// (!RequestsAny && !effective.HasTemplateClaim; a pod with any claim is left to the
// skimmer).
func (s *podSkimmer) namesNoManaged(b []byte) (bool, error) {
	err := eachField(b, func(num protowire.Number, v []byte) error {
		if num != 2 {
			return nil
		}
		return eachField(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 2, 20:
				return eachField(v, func(num protowire.Number, v []byte) error {
					if num == 8 {
						return s.resourcesNoManaged(v)
					}
					return nil
				})
			case 39:
				return errManaged
			}
			return nil
		})
	})
	if errors.Is(err, errManaged) {
		return false, nil
	}
	return err == nil, err
}

// resourcesNoManaged returns errManaged when the ResourceRequirements
// message b names a managed resource in its limits or requests.
func (s *podSkimmer) resourcesNoManaged(b []byte) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		if num != 1 && num != 2 {
			return nil
		}
		key, err := entryKey(v)
		if err != nil {
			return err
		}
		if _, managed := effective.ManagedBy(s.families, corev1.ResourceName(key)); managed {
			return errManaged
		}
		return nil
	})
}

// entryKey is the key of a map entry (empty when absent, as the generated
// code reads it), not copied.
func entryKey(b []byte) ([]byte, error) {
	var key []byte
	err := eachField(b, func(num protowire.Number, v []byte) error {
		if num == 1 {
			key = v
		}
		return nil
	})
	return key, err
}

// podScratch is the Pod a GPU pod is skimmed into, and the arrays of its
// container and status lists, kept for the next pod.
type podScratch struct {
	pod                        corev1.Pod
	inits, apps                []corev1.Container
	initStatuses, appsStatuses []corev1.ContainerStatus
}

// reset empties the scratch pod for the next pod and returns it.
func (sc *podScratch) reset() *corev1.Pod {
	sc.pod = corev1.Pod{}
	sc.pod.Spec.InitContainers, sc.pod.Spec.Containers = sc.inits[:0], sc.apps[:0]
	sc.pod.Status.InitContainerStatuses, sc.pod.Status.ContainerStatuses = sc.initStatuses[:0], sc.appsStatuses[:0]
	return &sc.pod
}

// settle keeps the (grown) arrays and makes the scratch pod's empty lists
// nil, as decoding whole leaves them (the slimmer keeps a nil list nil).
func (sc *podScratch) settle() {
	sp, st := &sc.pod.Spec, &sc.pod.Status
	sc.inits, sc.apps = sp.InitContainers[:0], sp.Containers[:0]
	sc.initStatuses, sc.appsStatuses = st.InitContainerStatuses[:0], st.ContainerStatuses[:0]
	if len(sp.InitContainers) == 0 {
		sp.InitContainers = nil
	}
	if len(sp.Containers) == 0 {
		sp.Containers = nil
	}
	if len(st.InitContainerStatuses) == 0 {
		st.InitContainerStatuses = nil
	}
	if len(st.ContainerStatuses) == 0 {
		st.ContainerStatuses = nil
	}
}
