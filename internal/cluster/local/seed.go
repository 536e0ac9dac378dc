package local

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// The seed's cluster: one node with one 24 GiB GPU and a namespace whose
// quota allows 24 GiB of GPU memory.
const (
	TeamA     = "team-a"
	QuotaName = "gpu-quota"
	NodeName  = "node1"
	// NodeDevices is node1's gpuadmit.io/gpu-devices annotation.
	NodeDevices = `[{"uuid":"GPU-0","index":0,"model":"NVIDIA L4","memoryMiB":24576,"cores":100,"migEnabled":false,"healthy":true}]`
)

// SeedTeamA creates the namespace team-a with ResourceQuota
// limits.nvidia.com/gpumem: 24576 and the node node1 with one 24 GiB GPU.
func (c *Cluster) SeedTeamA(ctx context.Context) error {
	return c.Seed(ctx, TeamA, "24576")
}

// Seed creates namespace ns with a gpumem quota of gpumem MiB and, once,
// node1 with one 24 GiB GPU.
func (c *Cluster) Seed(ctx context.Context, ns, gpumem string) error {
	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		return err
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpumem": resource.MustParse(gpumem)}}}
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating resourcequota %s/%s: %w", ns, QuotaName, err)
	}
	if _, err := c.Kube.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{}); err == nil {
		return nil
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName, Labels: map[string]string{"kubernetes.io/hostname": NodeName},
		Annotations: map[string]string{"gpuadmit.io/gpu-devices": NodeDevices}}}
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating node %s: %w", NodeName, err)
	}
	return nil
}

// Bind plays the scheduler: it binds the pod to node.
func (c *Cluster) Bind(ctx context.Context, ns, pod, node string) error {
	b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
		Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := c.Kube.CoreV1().Pods(ns).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("binding pod %s/%s to %s: %w", ns, pod, node, err)
	}
	return nil
}

// InitRunning plays the kubelet: the pod's first init container runs, the
// others wait.
func (c *Cluster) InitRunning(ctx context.Context, ns, pod string) error {
	return c.setStatus(ctx, ns, pod, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.InitContainerStatuses = nil
		for i, ic := range p.Spec.InitContainers {
			st := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}
			if i == 0 {
				st = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
			}
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses,
				corev1.ContainerStatus{Name: ic.Name, Image: ic.Image, State: st})
		}
	})
}

// InitsDone plays the kubelet: every init container terminated with exit
// code 0 and the app containers run.
func (c *Cluster) InitsDone(ctx context.Context, ns, pod string) error {
	return c.setStatus(ctx, ns, pod, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.InitContainerStatuses = nil
		for _, ic := range p.Spec.InitContainers {
			p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, corev1.ContainerStatus{
				Name: ic.Name, Image: ic.Image, Ready: true,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: now, FinishedAt: now}}})
		}
		p.Status.ContainerStatuses = nil
		for _, ac := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: ac.Name, Image: ac.Image, Ready: true, Started: ptr.To(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		}
	})
}

func (c *Cluster) setStatus(ctx context.Context, ns, name string, f func(*corev1.Pod)) error {
	pods := c.Kube.CoreV1().Pods(ns)
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading pod %s/%s: %w", ns, name, err)
	}
	f(p)
	if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("writing the status of pod %s/%s: %w", ns, name, err)
	}
	return nil
}

// CreatePod creates p through the API server: the webhooks decide it.
func (c *Cluster) CreatePod(ctx context.Context, p *corev1.Pod) error {
	_, err := c.Kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	return err
}

// Namespace is the running server's view of ns: its ledger's snapshot,
// counting the reservations of the GPUReservationSets as the server reads
// them (Reservations -1 when they cannot be read).
func (c *Cluster) Namespace(ns string) ledger.NamespaceSnapshot {
	pending, err := c.Server.Store.Reserved(context.Background())
	if err != nil {
		return ledger.NamespaceSnapshot{Namespace: ns, Reservations: -1}
	}
	return c.Server.Ledger.Namespace(ns, pending[ns])
}

// WaitLedger waits until the running server's ledger snapshot of ns
// satisfies ok, and returns it.
func (c *Cluster) WaitLedger(ctx context.Context, ns string, ok func(ledger.NamespaceSnapshot) bool) (ledger.NamespaceSnapshot, error) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		if c.Server == nil {
			return ledger.NamespaceSnapshot{}, fmt.Errorf("no webhook server is running")
		}
		s := c.Namespace(ns)
		if ok(s) {
			return s, nil
		}
		if time.Now().After(deadline) {
			return s, fmt.Errorf("ledger of %s did not reach the expected state in 20s: used %s, reserved %s", ns, s.Used, s.Reserved)
		}
		select {
		case <-ctx.Done():
			return s, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Recount builds a ledger from scratch out of what the API server holds now
// (every Node and ResourceSlice, and the ResourceQuotas, Pods and ResourceClaims of ns) and returns its
// snapshot of ns: what the running server's ledger must equal once its
// watches caught up.
func (c *Cluster) Recount(ctx context.Context, ns string) (ledger.NamespaceSnapshot, error) {
	fams := []effective.Family{effective.Nvidia()}
	charger, err := dra.NewCharger(config.DeviceClasses(config.Default()), fams, config.ChargerOptions(config.Default())...)
	if err != nil {
		return ledger.NamespaceSnapshot{}, err
	}
	l := ledger.New(ledger.Options{Families: fams, Claims: charger})
	slices, err := c.Kube.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ledger.NamespaceSnapshot{}, fmt.Errorf("listing resourceslices: %w", err)
	}
	for i := range slices.Items {
		l.UpsertSlice(&slices.Items[i])
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return ledger.NamespaceSnapshot{}, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		l.UpsertNode(&nodes.Items[i])
	}
	quotas, err := c.Kube.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ledger.NamespaceSnapshot{}, fmt.Errorf("listing resourcequotas: %w", err)
	}
	for i := range quotas.Items {
		l.UpsertQuota(&quotas.Items[i])
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ledger.NamespaceSnapshot{}, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		l.UpsertPod(&pods.Items[i])
	}
	claims, err := c.Kube.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ledger.NamespaceSnapshot{}, fmt.Errorf("listing resourceclaims: %w", err)
	}
	for i := range claims.Items {
		l.UpsertClaim(&claims.Items[i])
	}
	return l.Namespace(ns, nil), nil
}
