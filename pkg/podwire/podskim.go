package podwire

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// podSkimmer decodes a Pod from its protobuf encoding keeping only what
// PodTransform reads: PodTransform(skimmed) equals PodTransform(decoded)
// for every pod (podskim_test.go). The rest of the pod (managedFields,
// env, probes, volumes, images, conditions, the quantities of resources no
// family manages) is skipped unread, which is most of a pod's bytes and of
// its decoding: a relist of 100k pods allocates a fraction of what
// decoding them whole does. Field numbers are those of k8s.io/api's
// generated.proto; fields kept whole are unmarshalled by their generated
// code. Like the generated code, repeated fields append, messages merge and
// scalars take the last value.
//
// decode goes further, for the pod watch: it returns what PodTransform
// makes of the pod (podscan.go), so that the watch needs no transform.
type podSkimmer struct {
	families []effective.Family
	// annotations are the pod annotations kept (newPodSlimmer's).
	annotations []string
	// bookmark keeps only the annotation that ends a watch's initial
	// events, for an object without a name (bookmarkMeta).
	bookmark []string
	// slim is the PodTransform that decode applies; scratch holds the
	// podScratch a GPU pod is skimmed into before it is slimmed (reused:
	// the slimmed pod shares nothing with it that the next pod overwrites).
	slim    *podSlimmer
	scratch sync.Pool
}

// newPodSkimmer keeps the annotations PodTransform keeps; the one that
// marks a watch's bookmark as the end of its initial events only on an
// object without a name (the reflector reads it; a bookmark is a Pod with
// only its metadata; bookmarkMeta).
func newPodSkimmer(fams []effective.Family) *podSkimmer {
	slim := newPodSlimmer(fams)
	s := &podSkimmer{families: fams, annotations: slim.annotations, slim: slim,
		bookmark: []string{metav1.InitialEventsAnnotationKey}}
	s.scratch.New = func() any { return &podScratch{} }
	return s
}

var errSkim = errors.New("malformed protobuf")

// eachField calls f with the number and the bytes of every length-delimited
// field of the message b; fields of other wire types are skipped (none of
// those read here is one).
func eachField(b []byte, f func(num protowire.Number, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: %w", errSkim, protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("%w: field %d: %w", errSkim, num, protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("%w: field %d: %w", errSkim, num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, v); err != nil {
			return err
		}
	}
	return nil
}

// lastVarint returns the last value of the varint field num of the
// message b (eachField skips varints), as the generated code keeps the
// last of a repeated scalar.
func lastVarint(b []byte, num protowire.Number) (v uint64, found bool, err error) {
	for len(b) > 0 {
		n, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, false, fmt.Errorf("%w: %w", errSkim, protowire.ParseError(l))
		}
		b = b[l:]
		if n == num && typ == protowire.VarintType {
			x, l := protowire.ConsumeVarint(b)
			if l < 0 {
				return 0, false, fmt.Errorf("%w: field %d: %w", errSkim, num, protowire.ParseError(l))
			}
			v, found, b = x, true, b[l:]
			continue
		}
		if l = protowire.ConsumeFieldValue(n, typ, b); l < 0 {
			return 0, false, fmt.Errorf("%w: field %d: %w", errSkim, n, protowire.ParseError(l))
		}
		b = b[l:]
	}
	return v, found, nil
}

// mapEntry reads a map<string, …> entry: its key and its value's bytes.
func mapEntry(b []byte) (key string, value []byte, err error) {
	err = eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			key = string(v)
		case 2:
			value = v
		}
		return nil
	})
	return key, value, err
}

// pod skims a Pod message into p. An object without a name (a bookmark)
// keeps the initial-events annotation too (bookmarkMeta), read in a second
// pass: a pod's is never copied.
func (s *podSkimmer) pod(b []byte, p *corev1.Pod) error {
	err := eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			if err := s.meta(v, &p.ObjectMeta, s.annotations, true); err != nil {
				return err
			}
			return owners(v, &p.ObjectMeta)
		case 2:
			return s.spec(v, &p.Spec)
		case 3:
			return s.status(v, &p.Status)
		}
		return nil
	})
	if err != nil || p.Name != "" {
		return err
	}
	return s.metaOnly(b, &p.ObjectMeta, s.bookmark)
}

// metaOnly reads the ObjectMeta of the Pod message b into m, keeping the
// annotations keep names.
func (s *podSkimmer) metaOnly(b []byte, m *metav1.ObjectMeta, keep []string) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		if num == 1 {
			return s.meta(v, m, keep, false)
		}
		return nil
	})
}

// meta reads the ObjectMeta message b as identity(m, false, keep...) keeps
// it: name, namespace, UID, resourceVersion and the annotations keep names;
// with created, its creationTimestamp too (a GPU pod's: what its burn
// starts from at the earliest, pkg/burn).
func (s *podSkimmer) meta(b []byte, m *metav1.ObjectMeta, keep []string, created bool) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 8:
			if created {
				return m.CreationTimestamp.Unmarshal(v)
			}
		case 1:
			m.Name = string(v)
		case 3:
			m.Namespace = string(v)
		case 5:
			m.UID = types.UID(v)
		case 6:
			m.ResourceVersion = string(v)
		case 12:
			return annotation(v, m, keep)
		}
		return nil
	})
}

// owners reads the ownerReferences of the ObjectMeta message b into m
// (the slimmer keeps the controller's apiVersion and kind).
func owners(b []byte, m *metav1.ObjectMeta) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		if num != 13 {
			return nil
		}
		m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{})
		return m.OwnerReferences[len(m.OwnerReferences)-1].Unmarshal(v)
	})
}

// annotation adds the map entry b to m's annotations if keep names it.
func annotation(b []byte, m *metav1.ObjectMeta, keep []string) error {
	k, v, err := mapEntry(b)
	if err != nil || !slices.Contains(keep, k) {
		return err
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = string(v)
	return nil
}

// spec keeps the containers (skimmed), nodeName, nodeSelector, affinity,
// resource claims, priorityClassName, activeDeadlineSeconds and
// serviceAccountName.
func (s *podSkimmer) spec(b []byte, sp *corev1.PodSpec) error {
	deadline, ok, err := lastVarint(b, 5)
	if err != nil {
		return err
	}
	if ok {
		d := int64(deadline)
		sp.ActiveDeadlineSeconds = &d
	}
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 24:
			sp.PriorityClassName = string(v)
		case 2:
			sp.Containers = append(sp.Containers, corev1.Container{})
			return s.container(v, &sp.Containers[len(sp.Containers)-1])
		case 20:
			sp.InitContainers = append(sp.InitContainers, corev1.Container{})
			return s.container(v, &sp.InitContainers[len(sp.InitContainers)-1])
		case 7:
			k, val, err := mapEntry(v)
			if err != nil {
				return err
			}
			if sp.NodeSelector == nil {
				sp.NodeSelector = map[string]string{}
			}
			sp.NodeSelector[k] = string(val)
		case 8:
			sp.ServiceAccountName = string(v)
		case 10:
			sp.NodeName = string(v)
		case 18:
			if sp.Affinity == nil {
				sp.Affinity = &corev1.Affinity{}
			}
			return sp.Affinity.Unmarshal(v)
		case 39:
			sp.ResourceClaims = append(sp.ResourceClaims, corev1.PodResourceClaim{})
			return sp.ResourceClaims[len(sp.ResourceClaims)-1].Unmarshal(v)
		}
		return nil
	})
}

// container keeps the name, restartPolicy and the managed resources.
func (s *podSkimmer) container(b []byte, c *corev1.Container) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			c.Name = string(v)
		case 8:
			return s.resources(v, &c.Resources)
		case 24:
			rp := corev1.ContainerRestartPolicy(v)
			c.RestartPolicy = &rp
		}
		return nil
	})
}

// resources keeps the limits and requests of managed resources (the
// quantities of the others are never parsed).
func (s *podSkimmer) resources(b []byte, r *corev1.ResourceRequirements) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			return s.quantity(v, &r.Limits)
		case 2:
			return s.quantity(v, &r.Requests)
		}
		return nil
	})
}

func (s *podSkimmer) quantity(b []byte, rl *corev1.ResourceList) error {
	k, v, err := mapEntry(b)
	if err != nil {
		return err
	}
	if _, managed := effective.ManagedBy(s.families, corev1.ResourceName(k)); !managed {
		return nil
	}
	var q resource.Quantity
	if err := q.Unmarshal(v); err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	if *rl == nil {
		*rl = corev1.ResourceList{}
	}
	(*rl)[corev1.ResourceName(k)] = q
	return nil
}

// status keeps the phase and the container statuses' names and states.
func (s *podSkimmer) status(b []byte, st *corev1.PodStatus) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			st.Phase = corev1.PodPhase(v)
		case 9:
			st.QOSClass = qosClass(v)
		case 8:
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{})
			return containerStatus(v, &st.ContainerStatuses[len(st.ContainerStatuses)-1])
		case 10:
			st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{})
			return containerStatus(v, &st.InitContainerStatuses[len(st.InitContainerStatuses)-1])
		}
		return nil
	})
}

// qosClass is a status.qosClass, the constant's string for the classes
// Kubernetes writes (no string allocated per pod).
func qosClass(v []byte) corev1.PodQOSClass {
	for _, c := range [...]corev1.PodQOSClass{corev1.PodQOSBestEffort, corev1.PodQOSBurstable, corev1.PodQOSGuaranteed} {
		if string(v) == string(c) {
			return c
		}
	}
	return corev1.PodQOSClass(v)
}

func containerStatus(b []byte, cs *corev1.ContainerStatus) error {
	return eachField(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			cs.Name = string(v)
		case 2:
			return cs.State.Unmarshal(v)
		case 3:
			return cs.LastTerminationState.Unmarshal(v)
		}
		return nil
	})
}
