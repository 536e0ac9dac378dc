package workloads_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// testDeploymentWhole: a Deployment of 4 x 8 GiB into 24 GiB can never run
// whole. The attack: it is refused at apply (and by a server-side dry
// run) before any pod exists; 3 x 8 GiB is admitted and the real
// ReplicaSet controller creates its 3 pods through the pod webhook;
// `kubectl scale --replicas=4` is refused and the Deployment keeps 3 pods;
// scaling down is never refused.
func testDeploymentWhole(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns, limit = "whole", 24576
	seed(t, c, ns, limit)
	four := manifest(t, deployment(ns, "llm", 4, 8192))
	for _, args := range [][]string{{"apply", "--dry-run=server", "-f", "-"}, {"apply", "-f", "-"}} {
		stdout, stderr, err := c.Kubectl(ctx, four, args...)
		if err == nil {
			t.Fatalf("kubectl %v of 4 x 8 GiB into 24 GiB was admitted: %s", args, stdout)
		}
		local.MustContain(t, "kubectl "+args[1], stderr, "denied the request", "Deployment whole/llm can never run whole",
			"4 pods x 8192 MiB = 32768 MiB of nvidia.com/gpumem", "over the limit 24576 MiB")
	}
	mustNotExist(t, c, ns, "deployments", func(ctx context.Context) error {
		_, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "llm", metav1.GetOptions{})
		return err
	})

	if stderr := apply(t, c, deployment(ns, "llm", 3, 8192)); stderr != "" {
		t.Errorf("3 x 8 GiB into an empty 24 GiB warned: %s", stderr)
	}
	awaitPods(t, c, ns, "llm", 3)
	if s := awaitRecount(t, c, ns); s.Used.Of("nvidia").MemMiB != limit {
		t.Errorf("used %d MiB, want %d", s.Used.Of("nvidia").MemMiB, limit)
	}

	stdout, stderr, err := c.Kubectl(ctx, nil, "scale", "-n", ns, "deployment/llm", "--replicas=4")
	if err == nil {
		t.Fatalf("kubectl scale --replicas=4 was admitted: %s", stdout)
	}
	local.MustContain(t, "kubectl scale --replicas=4", stderr, "denied the request", "can never run whole", "4 pods x 8192 MiB")
	d, err := c.Kube.AppsV1().Deployments(ns).Get(ctx, "llm", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("after the refused scale the Deployment is %v (err %v), want 3 replicas", d.Spec.Replicas, err)
	}
	if _, stderr, err := c.Kubectl(ctx, nil, "scale", "-n", ns, "deployment/llm", "--replicas=2"); err != nil {
		t.Fatalf("scaling down to 2 was refused: %s", stderr)
	}
	awaitPods(t, c, ns, "llm", 2)
	if s := awaitRecount(t, c, ns); s.Used.Of("nvidia").MemMiB != 2*8192 {
		t.Errorf("used %d MiB after scaling down, want %d", s.Used.Of("nvidia").MemMiB, 2*8192)
	}
}

// testJobs: a namespace limited to 5 GPUs. The attack: a Job of 8 x 1 GPU
// and a CronJob whose jobTemplate runs 8 are refused at apply (nothing
// created); a Job of 5 is admitted and the real Job controller creates its
// 5 pods through the pod webhook; a CronJob of 4 then fits the limit but
// not the headroom, and is admitted with a warning saying its pods will
// wait.
func testJobs(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "jobs"
	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx,
		testquota.New(ns, local.QuotaName, map[string]string{"limits.nvidia.com/gpu": "5"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].GPU != nil })
	for _, tc := range []struct {
		what string
		obj  any
		want []string
	}{
		{"Job of 8", job(ns, "train", 8), []string{"Job jobs/train can never run whole", "8 pods x 1 = 8 of nvidia.com/gpu", "over the limit 5"}},
		{"CronJob of 8", cronJob(ns, "nightly", 8), []string{"CronJob jobs/nightly can never run whole", "8 pods x 1 = 8 of nvidia.com/gpu", "over the limit 5"}},
	} {
		stdout, stderr, err := c.Kubectl(ctx, manifest(t, tc.obj), "apply", "-f", "-")
		if err == nil {
			t.Fatalf("%s against 5 GPUs was admitted: %s", tc.what, stdout)
		}
		local.MustContain(t, tc.what, stderr, append([]string{"denied the request"}, tc.want...)...)
	}
	mustNotExist(t, c, ns, "jobs", func(ctx context.Context) error {
		if _, err := c.Kube.BatchV1().Jobs(ns).Get(ctx, "train", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return err
		}
		_, err := c.Kube.BatchV1().CronJobs(ns).Get(ctx, "nightly", metav1.GetOptions{})
		return err
	})

	apply(t, c, job(ns, "train", 5))
	awaitPods(t, c, ns, "train", 5)
	if s := awaitRecount(t, c, ns); s.Used.Of("nvidia").GPU != 5 {
		t.Errorf("used %d GPUs, want 5", s.Used.Of("nvidia").GPU)
	}
	nightly := cronJob(ns, "nightly", 4)
	nightly.Spec.Schedule = "0 0 1 1 *" // once a year: it never runs during the test
	local.MustContain(t, "a CronJob of 4 beside the Job of 5", apply(t, c, nightly), "Warning:", "CronJob jobs/nightly: 4 of 4 pods will wait")
}

// mustNotExist fails t unless get returns NotFound: what a refused apply
// must have left.
func mustNotExist(t *testing.T, c *local.Cluster, ns, what string, get func(context.Context) error) {
	t.Helper()
	if err := get(t.Context()); !apierrors.IsNotFound(err) {
		t.Errorf("%s: a refused %s exists (or cannot be read: %v)", ns, what, err)
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("%s: %d pods after a refused apply (err %v), want none", ns, len(pods.Items), err)
	}
}

// testWarnStillCapped: under workloads.enforcement Warn a Deployment that
// can never run whole is admitted with a warning saying so. The attack:
// its pods are still capped one by one; 3 run, the 4th is refused while
// the ReplicaSet retries, and the namespace never holds more than its
// limit.
func testWarnStillCapped(t *testing.T, c *local.Cluster) {
	restartWebhook(t, c, configv1alpha1.WorkloadEnforcementWarn)
	t.Cleanup(func() { restartWebhook(t, c, configv1alpha1.WorkloadEnforcementDeny) })
	const ns, limit = "warned", 24576
	seed(t, c, ns, limit)
	local.MustContain(t, "kubectl apply of 4 x 8 GiB into 24 GiB under Warn", apply(t, c, deployment(ns, "llm", 4, 8192)),
		"Warning:", "Deployment warned/llm can never run whole", "(admitted: workloads.enforcement is Warn)")
	watchRetries(t, c, ns, "llm", limit, 8)
	if got := countPods(t, c, ns, "llm"); got != 3 {
		t.Errorf("%d pods of the Deployment, want 3", got)
	}
	if s := awaitRecount(t, c, ns); s.Used.Of("nvidia").MemMiB != limit {
		t.Errorf("used %d MiB, want %d", s.Used.Of("nvidia").MemMiB, limit)
	}
}

// restartWebhook stops the webhook server and starts it again with the
// cluster's options and workloads.enforcement set to e.
func restartWebhook(t *testing.T, c *local.Cluster, e configv1alpha1.WorkloadEnforcement) {
	t.Helper()
	if err := c.StopWebhook(); err != nil {
		t.Fatal(err)
	}
	o := c.Options()
	o.Config.Workloads.Enforcement = ptr.To(e)
	if err := c.StartWebhook(context.WithoutCancel(t.Context()), o); err != nil {
		t.Fatal(err)
	}
}

// testStatefulSet: the same rules for a StatefulSet, whose pods the real
// StatefulSet controller creates by name. The attack: 4 x 8 GiB into
// 24 GiB refused at apply, 3 admitted and created, `kubectl scale
// --replicas=4` refused with the three pods kept.
func testStatefulSet(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns, limit = "sts", 24576
	seed(t, c, ns, limit)
	stdout, stderr, err := c.Kubectl(ctx, manifest(t, statefulSet(ns, "db", 4, 8192)), "apply", "-f", "-")
	if err == nil {
		t.Fatalf("a StatefulSet of 4 x 8 GiB into 24 GiB was admitted: %s", stdout)
	}
	local.MustContain(t, "kubectl apply", stderr, "StatefulSet sts/db can never run whole", "4 pods x 8192 MiB")
	mustNotExist(t, c, ns, "statefulsets", func(ctx context.Context) error {
		_, err := c.Kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		return err
	})
	apply(t, c, statefulSet(ns, "db", 3, 8192))
	if got := awaitPods(t, c, ns, "db", 3); strings.Join(got, ",") != "db-0,db-1,db-2" {
		t.Errorf("the StatefulSet's pods are %v, want db-0, db-1 and db-2", got)
	}
	_, stderr, err = c.Kubectl(ctx, nil, "scale", "-n", ns, "statefulset/db", "--replicas=4")
	if err == nil {
		t.Fatal("kubectl scale statefulset/db --replicas=4 was admitted")
	}
	local.MustContain(t, "kubectl scale", stderr, "can never run whole")
	if s := awaitRecount(t, c, ns); s.Used.Of("nvidia").MemMiB != limit || s.Pods != 3 {
		t.Errorf("used %d MiB by %d pods, want %d by 3", s.Used.Of("nvidia").MemMiB, s.Pods, limit)
	}
}

// testNoGPUNeverRefused: workloads without a GPU are none of gpuadmit's
// business. The attack: a plain Deployment, its scale to 50 and a plain
// Job in a namespace whose GPU quota is full are all admitted (the
// workload webhook's matchCondition once errored on a request without a
// subresource and, failing closed, refused every one of them).
func testNoGPUNeverRefused(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "plain"
	seed(t, c, ns, 8192)
	if err := c.CreatePod(ctx, creates.GPUPod(ns, "full", "", 8192)); err != nil {
		t.Fatal(err)
	}
	d := deployment(ns, "web", 2, 0)
	d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	j := job(ns, "batch", 3)
	j.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	apply(t, c, d)
	apply(t, c, j)
	if _, stderr, err := c.Kubectl(ctx, nil, "scale", "-n", ns, "deployment/web", "--replicas=50"); err != nil {
		t.Fatalf("scaling a Deployment without a GPU was refused: %s", stderr)
	}
	awaitPods(t, c, ns, "web", 50)
	awaitPods(t, c, ns, "batch", 3)
}
