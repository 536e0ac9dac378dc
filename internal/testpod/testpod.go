package testpod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Default resource names (HAMi's defaults).
const (
	GPUName    corev1.ResourceName = "nvidia.com/gpu"
	MemName    corev1.ResourceName = "nvidia.com/gpumem"
	MemPctName corev1.ResourceName = "nvidia.com/gpumem-percentage"
	CoresName  corev1.ResourceName = "nvidia.com/gpucores"
)

// AllocatedAnnotation is HAMi's per-container device assignment annotation.
const AllocatedAnnotation = "hami.io/vgpu-devices-allocated"

// Opt sets resources on a container (limits unless wrapped in Request).
type Opt func(*corev1.Container)

// GPU sets the device count.
func GPU(n int64) Opt { return Res(GPUName, fmt.Sprint(n)) }

// Mem sets the memory per device (memory units, MiB with factor 1).
func Mem(n int64) Opt { return Res(MemName, fmt.Sprint(n)) }

// MemPct sets the memory per device as a percentage of the device.
func MemPct(n int64) Opt { return Res(MemPctName, fmt.Sprint(n)) }

// Cores sets the core percentage per device.
func Cores(n int64) Opt { return Res(CoresName, fmt.Sprint(n)) }

// CPU sets a CPU limit (an unmanaged resource).
func CPU(value string) Opt { return Res(corev1.ResourceCPU, value) }

// Res sets any resource limit to any quantity string (for invalid values: "1.5", "-1").
func Res(name corev1.ResourceName, value string) Opt {
	return ResRaw(name, resource.MustParse(value))
}

// ResRaw sets any resource limit to a quantity (for values no string parses to).
func ResRaw(name corev1.ResourceName, q resource.Quantity) Opt {
	return func(c *corev1.Container) {
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Limits[name] = q
	}
}

// Request applies opts as resource requests instead of limits.
func Request(opts ...Opt) Opt {
	return func(c *corev1.Container) {
		var tmp corev1.Container
		for _, o := range opts {
			o(&tmp)
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		for k, v := range tmp.Resources.Limits {
			c.Resources.Requests[k] = v
		}
	}
}

// Builder builds one Pod.
type Builder struct {
	pod     corev1.Pod
	phase   corev1.PodPhase
	appRuns bool
}

// New starts a pod named name in namespace "default"; its UID is "uid-<ns>-<name>".
func New(name string) *Builder {
	return &Builder{pod: corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
	}}
}

// NS sets the namespace.
func (b *Builder) NS(ns string) *Builder { b.pod.Namespace = ns; return b }

// UID sets the UID (default "uid-<ns>-<name>").
func (b *Builder) UID(uid string) *Builder { b.pod.UID = types.UID(uid); return b }

// RV sets the resourceVersion.
func (b *Builder) RV(rv string) *Builder { b.pod.ResourceVersion = rv; return b }

// Init adds a regular init container.
func (b *Builder) Init(name string, opts ...Opt) *Builder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, container(name, opts))
	return b
}

// Sidecar adds an init container with restartPolicy Always (a native sidecar).
func (b *Builder) Sidecar(name string, opts ...Opt) *Builder {
	c := container(name, opts)
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, c)
	return b
}

// App adds an app container.
func (b *Builder) App(name string, opts ...Opt) *Builder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, container(name, opts))
	return b
}

// Node binds the pod to a node (spec.nodeName).
func (b *Builder) Node(node string) *Builder { b.pod.Spec.NodeName = node; return b }

// NodeSelector adds a nodeSelector entry.
func (b *Builder) NodeSelector(key, value string) *Builder {
	if b.pod.Spec.NodeSelector == nil {
		b.pod.Spec.NodeSelector = map[string]string{}
	}
	b.pod.Spec.NodeSelector[key] = value
	return b
}

// RequireNodeLabelIn adds a required node affinity term: label key in values.
func (b *Builder) RequireNodeLabelIn(key string, values ...string) *Builder {
	if b.pod.Spec.Affinity == nil {
		b.pod.Spec.Affinity = &corev1.Affinity{}
	}
	a := b.pod.Spec.Affinity
	if a.NodeAffinity == nil {
		a.NodeAffinity = &corev1.NodeAffinity{}
	}
	if a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	req := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	req.NodeSelectorTerms = append(req.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}})
	return b
}

// Devices sets hami.io/vgpu-devices-allocated.
func (b *Builder) Devices(value string) *Builder { return b.Annotate(AllocatedAnnotation, value) }

// Label sets a label.
func (b *Builder) Label(key, value string) *Builder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[key] = value
	return b
}

// Annotate sets an annotation.
func (b *Builder) Annotate(key, value string) *Builder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[key] = value
	return b
}

// Phase sets status.phase explicitly.
func (b *Builder) Phase(p corev1.PodPhase) *Builder { b.phase = p; return b }

// InitRunning reports init (or sidecar) container name as running.
func (b *Builder) InitRunning(name string) *Builder {
	return b.initStatus(name, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
}

// InitWaiting reports init container name as waiting.
func (b *Builder) InitWaiting(name string) *Builder {
	return b.initStatus(name, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}})
}

// InitTerminated reports init container name as terminated with exit code code.
func (b *Builder) InitTerminated(name string, code int32) *Builder {
	return b.initStatus(name, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}})
}

// InitRestarted reports init container name as running again after a
// previous run that terminated with exit code lastCode.
func (b *Builder) InitRestarted(name string, lastCode int32) *Builder {
	st := b.status(&b.pod.Status.InitContainerStatuses, name)
	st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	st.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: lastCode}}
	st.RestartCount++
	return b
}

// InitLastTerminated sets the last termination state of init container name.
func (b *Builder) InitLastTerminated(name string, code int32) *Builder {
	st := b.status(&b.pod.Status.InitContainerStatuses, name)
	st.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
	return b
}

// AppRunning reports app container name as running (and the phase as Running).
func (b *Builder) AppRunning(name string) *Builder {
	st := b.status(&b.pod.Status.ContainerStatuses, name)
	st.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	b.appRuns = true
	return b
}

// Build returns the pod.
func (b *Builder) Build() *corev1.Pod {
	p := b.pod.DeepCopy()
	if p.UID == "" {
		p.UID = types.UID("uid-" + p.Namespace + "-" + p.Name)
	}
	switch {
	case b.phase != "":
		p.Status.Phase = b.phase
	case b.appRuns:
		p.Status.Phase = corev1.PodRunning
	default:
		p.Status.Phase = corev1.PodPending
	}
	return p
}

func (b *Builder) initStatus(name string, s corev1.ContainerState) *Builder {
	b.status(&b.pod.Status.InitContainerStatuses, name).State = s
	return b
}

func (b *Builder) status(list *[]corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range *list {
		if (*list)[i].Name == name {
			return &(*list)[i]
		}
	}
	*list = append(*list, corev1.ContainerStatus{Name: name})
	return &(*list)[len(*list)-1]
}

func container(name string, opts []Opt) corev1.Container {
	c := corev1.Container{Name: name, Image: "registry.example/" + name + ":1"}
	for _, o := range opts {
		o(&c)
	}
	return c
}
