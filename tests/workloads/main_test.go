// Package workloads_test is the integration suite of workloads as a whole,
// on a real kube-apiserver and etcd with the real kube-controller-manager
// (all three built from source, driven by envtest through
// internal/cluster/local), gpuadmit's webhook server wired by pkg/server
// exactly as cmd/webhook wires it, and the kubectl built from source: the
// PodGroup API served; a Deployment's pods created by the ReplicaSet
// controller as its own ServiceAccount; a Deployment of 4 x 8 GiB into
// 24 GiB refused at apply and by a server-side dry run, 3 x 8 GiB admitted
// and its pods created through the pod webhook, `kubectl scale
// --replicas=4` refused and scaling down never; the same for a
// StatefulSet, whose pods its controller creates by name; a Job of 8 x 1 GPU and a
// CronJob of 8 (through its jobTemplate) against a limit of 5 refused; a
// full namespace's rolling update warned at apply and stalled on its surge
// pod, the running pods untouched; a Job of 4 workers naming a PodGroup of
// minCount 4 where 3 fit: not one worker admitted while the Job controller
// retries, the gang whole once room is freed; workloads without a GPU
// never refused; a Deployment past the headroom (and,
// under enforcement Warn, one past the limit) never over the quota while
// its ReplicaSet retries; two users' Deployments in a namespace with a
// per-user limit of 2 GPUs each stopped at 2, their controllers' pods
// charged to the users through the requesting-user stamp, and a user who
// writes another's stamp into his template overwritten. The suite plays the scheduler and the kubelet
// (binding, container statuses) where a check needs running pods. The
// tests end by checking the namespace's ledger against a recount of what
// the API server holds.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package workloads_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestWorkloads runs every scenario on one control plane with the
// controller manager (each in its own namespace).
func TestWorkloads(t *testing.T) {
	c := local.ForTestWith(t, local.Config{Manifests: "../../manifests/webhook", ControllerManager: true}, local.DefaultWebhook)

	t.Run("the PodGroup API is served", func(t *testing.T) { testPodGroupAPI(t, c) })
	t.Run("controllers act as their ServiceAccounts", func(t *testing.T) { testControllerIdentity(t, c) })
	t.Run("a Deployment past the headroom: never over the quota while its ReplicaSet retries",
		func(t *testing.T) { testReplicaSetRetries(t, c) })
	t.Run("a rolling update of a full namespace: warned at apply, stalled on its surge pod", func(t *testing.T) { testRolloutStalls(t, c) })
	t.Run("a Deployment that can never run whole is refused at apply and at scale", func(t *testing.T) { testDeploymentWhole(t, c) })
	t.Run("a StatefulSet that can never run whole is refused at apply and at scale", func(t *testing.T) { testStatefulSet(t, c) })
	t.Run("Jobs and CronJobs past the GPU count", func(t *testing.T) { testJobs(t, c) })
	t.Run("a Job's gang is admitted whole or not at all", func(t *testing.T) { testJobGang(t, c) })
	t.Run("workloads without a GPU are never refused", func(t *testing.T) { testNoGPUNeverRefused(t, c) })
	t.Run("under enforcement Warn the pods are still capped", func(t *testing.T) { testWarnStillCapped(t, c) })
	t.Run("per-user limits: two users' Deployments each stop at their limit; a forged stamp is overwritten",
		func(t *testing.T) { testPerUser(t, c) })
}

// testPodGroupAPI checks that the test API server serves PodGroups
// (scheduling.k8s.io/v1beta1) and keeps a pod's spec.schedulingGroup: the
// API the gang checks read. Without the GenericWorkload gate the create
// fails (no such resource) and the pod's field is dropped.
func testPodGroupAPI(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	if err := c.CreateNamespace(ctx, "pg", nil); err != nil {
		t.Fatal(err)
	}
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "train", Namespace: "pg"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}}}
	got, err := c.Kube.SchedulingV1beta1().PodGroups("pg").Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a PodGroup: %v", err)
	}
	if g := got.Spec.SchedulingPolicy.Gang; g == nil || g.MinCount != 4 {
		t.Fatalf("PodGroup's gang policy = %+v, want minCount 4", got.Spec.SchedulingPolicy)
	}
	p := creates.GPUPod("pg", "worker-0", "", 1024)
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
	pod, err := c.Kube.CoreV1().Pods("pg").Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a pod of the group: %v", err)
	}
	if sg := pod.Spec.SchedulingGroup; sg == nil || sg.PodGroupName == nil || *sg.PodGroupName != "train" {
		t.Fatalf("the pod's spec.schedulingGroup = %+v, want podGroupName train", sg)
	}
}
