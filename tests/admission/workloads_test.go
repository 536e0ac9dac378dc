package admission_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// podSpec is a pod template's spec asking one GPU and memMiB.
func podSpec(memMiB int64, image string) string {
	return fmt.Sprintf(`{containers: [{name: c, image: %s, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: %d}}}]}`, image, memMiB)
}

func deploymentYAML(ns string, replicas, memMiB int64, image string) []byte {
	return fmt.Appendf(nil, `apiVersion: apps/v1
kind: Deployment
metadata: {name: train, namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: train}}
  template:
    metadata: {labels: {app: train}}
    spec: %s
`, ns, replicas, podSpec(memMiB, image))
}

func jobYAML(ns string, parallelism int64) []byte {
	return fmt.Appendf(nil, `apiVersion: batch/v1
kind: Job
metadata: {name: allreduce, namespace: %s}
spec:
  parallelism: %d
  completions: %d
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]
`, ns, parallelism, parallelism)
}

func cronJobYAML(ns string, parallelism int64) []byte {
	return fmt.Appendf(nil, `apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: %s}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      parallelism: %d
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: registry.example/train:1, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]
`, ns, parallelism)
}

// testWorkloads: workloads are checked as a whole when applied, through the
// chart's webhook configuration and the kubectl built from source: the
// Deployment of 4 x 8 GiB into 24 GiB refused (and by a server dry run),
// 3 x 8 GiB admitted, `kubectl scale --replicas=4` refused, a rollout of a
// full namespace warned, a Job of 8 x 1 GPU and a CronJob of 8 against a
// limit of 5 GPUs refused. No pod is created here: nothing is charged.
func testWorkloads(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "workloads"
	if err := c.Seed(ctx, ns, "24576"); err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpu": resource.MustParse("5")}}}
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool {
		return s.Limits["nvidia"].MemMiB != nil && s.Limits["nvidia"].GPU != nil
	})
	apply := func(name string, manifest []byte, ok bool, want []string, args ...string) {
		t.Helper()
		stdout, stderr, err := c.Kubectl(ctx, manifest, append([]string{"apply", "-f", "-"}, args...)...)
		if (err == nil) != ok {
			t.Fatalf("%s: err = %v; stdout %q stderr %q", name, err, stdout, stderr)
		}
		local.MustContain(t, name, stdout+stderr, want...)
	}
	never := []string{`validate-workloads.gpuadmit.io" denied the request`, "Deployment workloads/train can never run whole",
		"4 pods x 8192 MiB = 32768 MiB of nvidia.com/gpumem, over the limit 24576 MiB"}
	apply("4 x 8 GiB, server dry run", deploymentYAML(ns, 4, 8192, "registry.example/a:1"), false, never, "--dry-run=server")
	apply("4 x 8 GiB", deploymentYAML(ns, 4, 8192, "registry.example/a:1"), false, never)
	apply("3 x 8 GiB", deploymentYAML(ns, 3, 8192, "registry.example/a:1"), true, []string{"deployment.apps/train created"})

	stdout, stderr, err := c.Kubectl(ctx, nil, "scale", "-n", ns, "deployment/train", "--replicas=4")
	if err == nil {
		t.Fatalf("kubectl scale --replicas=4 admitted: %q %q", stdout, stderr)
	}
	local.MustContain(t, "scale to 4", stdout+stderr, "can never run whole", "4 pods x 8192 MiB")

	// The namespace full of the Deployment's own pods (no controller runs
	// here: created as its ReplicaSet would name them).
	for i := range 3 {
		p := creates.GPUPod(ns, fmt.Sprintf("train-5d8f9-%d", i), "", 8192)
		if err := c.CreatePod(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Pods == 3 && s.Reservations == 0 })
	apply("rollout of a full namespace", deploymentYAML(ns, 3, 8192, "registry.example/a:2"), true,
		[]string{"Warning:", "the rollout will stall: its 1 surge pod(s) need 8192 MiB of nvidia.com/gpumem, and 0 MiB is free"})

	gpus := []string{"denied the request", "8 pods x 1 = 8 of nvidia.com/gpu, over the limit 5 of ResourceQuota gpus"}
	apply("Job of 8 x 1 GPU", jobYAML(ns, 8), false, append(gpus, "Job workloads/allreduce"))
	apply("CronJob of 8 x 1 GPU", cronJobYAML(ns, 8), false, append(gpus, "CronJob workloads/nightly"))
	apply("CronJob of 2 x 1 GPU", cronJobYAML(ns, 2), true, []string{"cronjob.batch/nightly created"})
	// Through the typed client (a request whose subResource is absent, not
	// empty): a non-GPU Deployment is created, a GPU one past the limit is not.
	plain := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: ns}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](50), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "plain"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "plain"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/web:1"}}}}}}
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a Deployment of no GPU refused: %v", err)
	}
	big := plain.DeepCopy()
	big.Name, big.Spec.Template.Spec.Containers[0].Resources = "big", creates.GPUPod(ns, "x", "", 8192).Spec.Containers[0].Resources
	if _, err := c.Kube.AppsV1().Deployments(ns).Create(ctx, big, metav1.CreateOptions{}); err == nil || !strings.Contains(err.Error(), "can never run whole") {
		t.Fatalf("a Deployment of 50 x 8 GiB: %v", err)
	}
	if s := c.Namespace(ns); s.Used.Of("nvidia").MemMiB != 3*8192 || s.Reservations != 0 {
		t.Errorf("the workload checks charged something: used %s, %d reservations", s.Used, s.Reservations)
	}
	if strings.Contains(stdout, "scaled") {
		t.Errorf("kubectl scale says it scaled: %q", stdout)
	}
}
