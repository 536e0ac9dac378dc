package relist_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// Namespaces is how many namespaces the pods are spread over.
const namespaces = 200

func nsName(i int) string { return "team-" + strconv.Itoa(i%namespaces) }

// gpuNode: every fourth node has two 80 GiB devices announced in
// gpuadmit.io/gpu-devices.
func gpuNode(i int) bool { return i%4 == 0 }

// node is a Node as the kubelet reports it (labels, capacity, conditions,
// images), GPU nodes with their devices.
func node(i int) *corev1.Node {
	name := fmt.Sprintf("node-%05d", i)
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"topology.kubernetes.io/zone": "zone-" + strconv.Itoa(i%3), "node.kubernetes.io/instance-type": "m5.8xlarge"}}}
	if gpuNode(i) {
		n.Labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
		n.Annotations = map[string]string{"gpuadmit.io/gpu-devices": fmt.Sprintf(
			`[{"uuid":"GPU-%05d-0","index":0,"memoryMiB":81920,"cores":100,"healthy":true},{"uuid":"GPU-%05d-1","index":1,"memoryMiB":81920,"cores":100,"healthy":true}]`, i, i)}
	}
	n.Status.Capacity = corev1.ResourceList{"cpu": resource.MustParse("32"), "memory": resource.MustParse("128Gi"), "pods": resource.MustParse("110")}
	n.Status.Allocatable = n.Status.Capacity
	for _, img := range []string{"registry.example/app", "registry.example/sidecar", "registry.example/init"} {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{img + ":1.2.3", img + "@sha256:0123456789abcdef"}, SizeBytes: 123456789})
	}
	return n
}

// pod is a Deployment's pod: labels, an owner, an app container with env,
// ports, probes, resources and volume mounts, and a sidecar; every fifth a
// GPU pod bound to a GPU node with HAMi's device assignment, the others
// bound to any node.
func pod(i, nodes int) *corev1.Pod {
	name := fmt.Sprintf("app-%07d", i)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsName(i),
		Labels: map[string]string{"app": "app-" + strconv.Itoa(i%50), "pod-template-hash": "5d8f7c9b6", "team": nsName(i)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app-5d8f7c9b6",
			UID: types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", i%50)), Controller: ptr.To(true)}}}}
	app := corev1.Container{Name: "app", Image: "registry.example/app:1.2.3",
		Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi")}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}}}
	for k := range 6 {
		app.Env = append(app.Env, corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", k), Value: "some-value-" + strconv.Itoa(k)})
	}
	node := i % nodes
	if i%5 == 0 {
		node = (i % ((nodes + 3) / 4)) * 4 // a GPU node
		app.Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse("4096")}
		p.Annotations = map[string]string{"hami.io/vgpu-devices-allocated": fmt.Sprintf("GPU-%05d-%d,NVIDIA,4096,0:;", node, i%2)}
	}
	p.Spec = corev1.PodSpec{NodeName: fmt.Sprintf("node-%05d", node), Containers: []corev1.Container{app,
		{Name: "proxy", Image: "registry.example/sidecar:1.2.3", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("50m")}}}},
		Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}}
	return p
}

// populate creates the namespaces, a GPU ResourceQuota in each, the nodes
// and the pods, with workers concurrent creates.
func populate(ctx context.Context, kube kubernetes.Interface, pods, nodes, workers int, progress func(string)) error {
	create := func(n int, f func(i int) error) error {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := int(next.Add(1)) - 1; i < n && ctx.Err() == nil; i = int(next.Add(1)) - 1 {
					if err := f(i); err != nil {
						errs <- err
						return
					}
					if i > 0 && i%20000 == 0 {
						progress(fmt.Sprintf("%d created", i))
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		return <-errs
	}
	opts := metav1.CreateOptions{FieldManager: "kube-controller-manager"}
	err := create(namespaces, func(i int) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i), Labels: map[string]string{"team": nsName(i), "gpu-tier": "gold"}}}
		if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, opts); err != nil {
			return fmt.Errorf("namespace: %w", err)
		}
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: nsName(i)}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"limits.nvidia.com/gpu": resource.MustParse("100000"), "limits.nvidia.com/gpumem": resource.MustParse("1000000000")}}}
		if _, err := kube.CoreV1().ResourceQuotas(nsName(i)).Create(ctx, q, opts); err != nil {
			return fmt.Errorf("resourcequota: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := create(nodes, func(i int) error {
		_, err := kube.CoreV1().Nodes().Create(ctx, node(i), opts)
		return err
	}); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	progress(fmt.Sprintf("%d nodes created", nodes))
	if err := create(pods, func(i int) error {
		p := pod(i, nodes)
		_, err := kube.CoreV1().Pods(p.Namespace).Create(ctx, p, opts)
		return err
	}); err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	progress(fmt.Sprintf("%d pods created", pods))
	return nil
}
