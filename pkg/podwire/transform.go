package podwire

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// Informer transforms keep only what the ledger reads, so that 100k pods fit
// in a few hundred MiB: no managedFields, no env, volumes, probes, images or
// conditions. They build new objects (the input is never modified; the
// output is read-only and may share parts with other outputs) and are
// idempotent.

// PodTransform slims Pods: name, namespace, UID, resourceVersion, the device
// assignment annotation, the requesting-user stamp and what says who created
// the pod without one (its controller reference's apiVersion and kind, its
// service account's name); spec containers' names, restartPolicy and managed
// resources, nodeName, nodeSelector and node affinity; what ResourceQuota
// scopes read (priorityClassName, activeDeadlineSeconds, status.qosClass,
// and pod (anti-)affinity when it names other namespaces); status phase and
// container states (running, waiting, or terminated with an exit code). A pod
// that names no managed resource becomes a PartialObjectMetadata of its
// identity: it is never charged, and much smaller than an empty Pod for
// each of the many such pods (the pod feed hands it to the ledger as a pod
// without containers).
//
// Identical container lists and status lists are shared between pods (the
// replicas of a Deployment have the same containers, and pods at the same
// stage the same statuses): the informer's objects are read-only, so sharing
// is safe, and it halves the memory of 100k pods.
func PodTransform(fams []effective.Family) toolscache.TransformFunc {
	t := newPodSlimmer(fams)
	return func(obj any) (any, error) {
		switch p := obj.(type) {
		case *corev1.Pod:
			return t.slim(p), nil
		case *metav1.PartialObjectMetadata, toolscache.DeletedFinalStateUnknown:
			return p, nil // slimmed already, or a tombstone
		}
		return nil, fmt.Errorf("pod transform: unexpected object %T", obj)
	}
}

// newPodSlimmer slims pods for fams, keeping the annotations the ledger
// reads.
func newPodSlimmer(fams []effective.Family) *podSlimmer {
	keep := append(append(devices.AllocAnnotations(fams), effective.PodAnnotations()...), stamp.Annotations()...)
	return &podSlimmer{families: fams, names: managedNames(fams), annotations: keep,
		containers: newInterner[[]corev1.Container](), statuses: newInterner[[]corev1.ContainerStatus](), classes: newInterner[string](),
		owners: newInterner[[]metav1.OwnerReference]()}
}

// bookmarkMeta is the identity of a pod that names no managed resource.
// The annotation that marks a watch's bookmark as the end of its initial
// events (metav1.InitialEventsAnnotationKey) is kept only on an object
// without a name, which no pod is: a bookmark is a Pod with only a
// resourceVersion and that annotation, and the reflector reads it from the
// bookmark event (the pod watch's decoder slims bookmarks too, podskim.go;
// an informer's transform never sees one). Any user who may edit a pod can
// set it, up to 256 KiB, on every pod; on a pod it is dropped on receipt.
func bookmarkMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	if m.Name != "" {
		return Identity(m, false)
	}
	return Identity(m, false, metav1.InitialEventsAnnotationKey)
}

type podSlimmer struct {
	families []effective.Family
	names    []corev1.ResourceName // every managed resource name
	// annotations are the pod annotations the ledger reads.
	annotations []string
	containers  *interner[[]corev1.Container]
	statuses    *interner[[]corev1.ContainerStatus]
	// classes shares priority class names (a cluster has a few).
	classes *interner[string]
	// owners shares the slim controller references (one per kind).
	owners *interner[[]metav1.OwnerReference]
}

func (t *podSlimmer) slim(p *corev1.Pod) runtime.Object {
	if !effective.RequestsAny(p, t.families) {
		if effective.HasTemplateClaim(p) {
			// Its templates' claims may be charged under it (pkg/ledger/templates.go):
			// its claims and its phase are read.
			out := &corev1.Pod{ObjectMeta: Identity(&p.ObjectMeta, false, stamp.Annotations()...)}
			t.keepCreator(p, out)
			out.Spec.ResourceClaims = p.Spec.ResourceClaims
			out.Status.Phase = p.Status.Phase
			return out
		}
		// Never charged: its identity is all the ledger reads, and a
		// PartialObjectMetadata is much smaller than an empty Pod.
		return podMeta(bookmarkMeta(&p.ObjectMeta))
	}
	out := t.slimGPU(p)
	out.Spec.ResourceClaims = p.Spec.ResourceClaims
	return out
}

// podMeta is the PartialObjectMetadata of a pod that is never charged.
func podMeta(m metav1.ObjectMeta) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: m}
}

func (t *podSlimmer) slimGPU(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: Identity(&p.ObjectMeta, false, t.annotations...)}
	out.CreationTimestamp = p.CreationTimestamp // a budget's burn starts from it at the earliest (pkg/burn)
	t.keepCreator(p, out)
	out.Spec.InitContainers = t.slimContainers(p.Spec.InitContainers)
	out.Spec.Containers = t.slimContainers(p.Spec.Containers)
	out.Spec.NodeName = p.Spec.NodeName
	out.Spec.NodeSelector = p.Spec.NodeSelector
	if a := p.Spec.Affinity; a != nil && (a.NodeAffinity != nil || effective.CrossNamespaceAffinity(a)) {
		out.Spec.Affinity = &corev1.Affinity{NodeAffinity: a.NodeAffinity}
		if effective.CrossNamespaceAffinity(a) { // a ResourceQuota scope reads it (pkg/ledger/scope.go): rare, kept whole
			out.Spec.Affinity.PodAffinity, out.Spec.Affinity.PodAntiAffinity = a.PodAffinity, a.PodAntiAffinity
		}
	}
	// What ResourceQuota scopes read (pkg/ledger/scope.go): status.qosClass is the
	// API server's, set at creation and immutable.
	if pc := p.Spec.PriorityClassName; pc != "" {
		out.Spec.PriorityClassName = t.classes.get(pc, func() string { return pc })
	}
	out.Spec.ActiveDeadlineSeconds = p.Spec.ActiveDeadlineSeconds
	out.Status.QOSClass = p.Status.QOSClass
	out.Status.Phase = p.Status.Phase
	out.Status.InitContainerStatuses = t.slimStatuses(p.Status.InitContainerStatuses)
	out.Status.ContainerStatuses = t.slimStatuses(p.Status.ContainerStatuses)
	return out
}

// keepCreator keeps what says who created p when its requesting-user
// stamp does not verify (stamp.UserOf): its controller ownerReference's
// apiVersion and kind, and its service account's name.
func (t *podSlimmer) keepCreator(p, out *corev1.Pod) {
	out.Spec.ServiceAccountName = p.Spec.ServiceAccountName
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		out.OwnerReferences = t.owners.get(ref.APIVersion+"\x00"+ref.Kind, func() []metav1.OwnerReference {
			yes := true
			return []metav1.OwnerReference{{APIVersion: ref.APIVersion, Kind: ref.Kind, Controller: &yes}}
		})
	}
}

// slimContainers keeps names, restart policies and managed resources.
func (t *podSlimmer) slimContainers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	names := t.names
	var key strings.Builder
	for i := range cs {
		c := &cs[i]
		key.WriteString(c.Name)
		if c.RestartPolicy != nil {
			key.WriteByte(0)
			key.WriteString(string(*c.RestartPolicy))
		}
		for _, rl := range [2]corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			key.WriteByte(1)
			if len(rl) == 0 {
				continue
			}
			for _, name := range names {
				if q, ok := rl[name]; ok {
					key.WriteString(string(name) + "=" + q.String() + ",")
				}
			}
		}
		key.WriteByte(2)
	}
	return t.containers.get(key.String(), func() []corev1.Container {
		out := make([]corev1.Container, len(cs))
		for i := range cs {
			out[i] = corev1.Container{Name: cs[i].Name, RestartPolicy: cs[i].RestartPolicy,
				Resources: corev1.ResourceRequirements{
					Limits:   managedOnly(cs[i].Resources.Limits, t.families),
					Requests: managedOnly(cs[i].Resources.Requests, t.families),
				}}
		}
		return out
	})
}

// managedNames lists every resource name of fams (empty names left out).
func managedNames(fams []effective.Family) []corev1.ResourceName {
	var out []corev1.ResourceName
	for i := range fams {
		n := fams[i].Names
		for _, name := range []corev1.ResourceName{n.Count, n.Memory, n.MemoryPercentage, n.Cores} {
			if name != "" {
				out = append(out, name)
			}
		}
	}
	return out
}

func managedOnly(rl corev1.ResourceList, fams []effective.Family) corev1.ResourceList {
	var out corev1.ResourceList
	for name, q := range rl {
		if _, ok := effective.ManagedBy(fams, name); ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q
		}
	}
	return out
}

// slimStatuses keeps each container's name, state and last termination
// state (which state, the exit code, startedAt and finishedAt): what
// effective.StageOf and the budgets' burn (pkg/burn) read.
func (t *podSlimmer) slimStatuses(sts []corev1.ContainerStatus) []corev1.ContainerStatus {
	if sts == nil {
		return nil
	}
	var key strings.Builder
	for i := range sts {
		key.WriteString(sts[i].Name)
		stateKey(&key, sts[i].State)
		stateKey(&key, sts[i].LastTerminationState)
		key.WriteByte(2)
	}
	return t.statuses.get(key.String(), func() []corev1.ContainerStatus {
		out := make([]corev1.ContainerStatus, len(sts))
		for i := range sts {
			out[i] = corev1.ContainerStatus{Name: sts[i].Name,
				State: slimState(sts[i].State), LastTerminationState: slimState(sts[i].LastTerminationState)}
		}
		return out
	})
}

func stateKey(b *strings.Builder, st corev1.ContainerState) {
	b.WriteByte(0)
	if st.Running != nil {
		b.WriteString("R" + strconv.FormatInt(st.Running.StartedAt.UnixNano(), 36))
	}
	if st.Waiting != nil {
		b.WriteByte('W')
	}
	if t := st.Terminated; t != nil {
		b.WriteString("T" + strconv.Itoa(int(t.ExitCode)) + "," + strconv.FormatInt(t.StartedAt.UnixNano(), 36) +
			"," + strconv.FormatInt(t.FinishedAt.UnixNano(), 36))
	}
}

// slimState keeps which state, the exit code, and the times the node wrote
// (startedAt, finishedAt: what a pod's burn is read from, pkg/burn).
func slimState(st corev1.ContainerState) corev1.ContainerState {
	var out corev1.ContainerState
	if st.Running != nil {
		out.Running = &corev1.ContainerStateRunning{StartedAt: st.Running.StartedAt}
	}
	if st.Waiting != nil {
		out.Waiting = &corev1.ContainerStateWaiting{}
	}
	if t := st.Terminated; t != nil {
		out.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, StartedAt: t.StartedAt, FinishedAt: t.FinishedAt}
	}
	return out
}

// interner shares identical immutable values by key. It holds at most
// internLimit keys; beyond that it starts over (values already shared stay
// shared, new ones are interned afresh), so a churn of distinct pods cannot
// grow it without bound.
type interner[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

const internLimit = 16384

func newInterner[T any]() *interner[T] { return &interner[T]{m: map[string]T{}} }

func (in *interner[T]) get(key string, build func() T) T {
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.m[key]; ok {
		return v
	}
	if len(in.m) >= internLimit {
		clear(in.m)
	}
	v := build()
	in.m[key] = v
	return v
}

// Identity keeps an object's identity, its labels when asked (node
// selectors are matched against a node's) and the listed annotations.
func Identity(m *metav1.ObjectMeta, labels bool, annotations ...string) metav1.ObjectMeta {
	out := metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
	if labels {
		out.Labels = m.Labels
	}
	for _, k := range annotations {
		if v, ok := m.Annotations[k]; ok {
			if out.Annotations == nil {
				out.Annotations = map[string]string{}
			}
			out.Annotations[k] = v
		}
	}
	return out
}
