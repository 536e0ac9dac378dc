package workloads_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// testReplicaSetRetries: a Deployment of 4 x 8 GiB in a namespace of
// 40 GiB where another pod holds 16 GiB: admitted at apply with a warning
// that one pod will wait. The real ReplicaSet controller
// creates its pods through the webhook: three are admitted, the fourth is
// refused, and the controller keeps retrying it. The attack: while it
// retries (eight refusals, over a second of the controller's backoff),
// the namespace never holds more than
// its limit, in the API server as in the ledger; once the other pod goes,
// the retry takes the room freed.
func testReplicaSetRetries(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns, limit = "retries", 40960
	seed(t, c, ns, limit)
	if err := c.CreatePod(ctx, creates.GPUPod(ns, "other", "", 16384)); err != nil {
		t.Fatalf("the other pod: %v", err)
	}
	local.MustContain(t, "kubectl apply of 4 x 8 GiB with 24 GiB free", apply(t, c, deployment(ns, "train", 4, 8192)),
		"Warning:", "Deployment retries/train: 1 of 4 pods will wait")
	refusals := watchRetries(t, c, ns, "train", limit, 8)
	local.MustContain(t, "the ReplicaSet's FailedCreate Event", refusals, "gpuadmit", "limit 40960 MiB")
	if got := countPods(t, c, ns, "train"); got != 3 {
		t.Errorf("%d pods of the Deployment, want 3", got)
	}
	s := awaitRecount(t, c, ns)
	if used := s.Used.Of("nvidia").MemMiB; used != limit {
		t.Errorf("used %d MiB while the ReplicaSet retries, want %d (3 x 8192 + 16384)", used, limit)
	}
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "other", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	awaitPods(t, c, ns, "train", 4)
	s = awaitRecount(t, c, ns)
	if used := s.Used.Of("nvidia").MemMiB; used != 4*8192 {
		t.Errorf("used %d MiB once the Deployment is whole, want %d", used, 4*8192)
	}
}

// testRolloutStalls: a Deployment of 3 x 8 GiB fills a namespace of
// 24 GiB; a new image starts a rolling update whose surge pod (maxSurge 1,
// maxUnavailable 0) does not fit, which kubectl apply warns of. The
// attack: the surge pod is refused at
// the new ReplicaSet, the three running pods stay as they are and the
// namespace never holds more than its limit.
func testRolloutStalls(t *testing.T, c *local.Cluster) {
	const ns, limit = "rollout", 24576
	seed(t, c, ns, limit)
	d := deployment(ns, "serve", 3, 8192)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
	apply(t, c, d)
	running := awaitPods(t, c, ns, "serve", 3)
	for _, p := range running {
		runPod(t, c, ns, p)
	}
	d.Spec.Template.Spec.Containers[0].Image = "registry.example/app:2"
	local.MustContain(t, "kubectl apply of a new image", apply(t, c, d),
		"Warning:", "Deployment rollout/serve: the rollout will stall: its 1 surge pod(s) need 8192 MiB of nvidia.com/gpumem")
	refusals := watchRetries(t, c, ns, "serve", limit, 8)
	local.MustContain(t, "the new ReplicaSet's FailedCreate Event", refusals, "gpuadmit", "limit 24576 MiB")
	if now := awaitPods(t, c, ns, "serve", 3); strings.Join(now, ",") != strings.Join(running, ",") {
		t.Errorf("the Deployment's pods are %v, want the three running before the update %v", now, running)
	}
	s := awaitRecount(t, c, ns)
	if used := s.Used.Of("nvidia").MemMiB; used != limit {
		t.Errorf("used %d MiB during the stalled rollout, want %d", used, limit)
	}
}

// watchRetries watches the ReplicaSets of Deployment app in ns until their
// FailedCreate Events count at least n refusals, checking at every look
// that the namespace holds no more than limit MiB (the API server's pods,
// recounted, and the ledger's used plus reserved); it returns the
// refusals' messages.
func watchRetries(t *testing.T, c *local.Cluster, ns, app string, limit int64, n int32) string {
	t.Helper()
	return watchRefusals(t, c, ns, "ReplicaSet", app+"-", limit, n, nil)
}

// watchRefusals is watchRetries for the controller's FailedCreate Events
// about objects of kind whose names start with prefix, with check (when
// set) run at every look too.
func watchRefusals(t *testing.T, c *local.Cluster, ns, kind, prefix string, limit int64, n int32, check func(context.Context) error) string {
	t.Helper()
	var msgs []string
	looks := 0
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		looks++
		if err := withinLimit(ctx, c, ns, limit); err != nil {
			return false, err
		}
		if check != nil {
			if err := check(ctx); err != nil {
				return false, err
			}
		}
		events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var count int32
		msgs = msgs[:0]
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && e.InvolvedObject.Kind == kind && strings.HasPrefix(e.InvolvedObject.Name, prefix) {
				count += max(e.Count, 1)
				msgs = append(msgs, e.Message)
			}
		}
		return count >= n, nil
	})
	if err != nil {
		t.Fatalf("after %d looks at %s: %v (refusals so far: %q)\n%s", looks, ns, err, msgs, c.ControllerManagerLog(10))
	}
	t.Logf("%s: %d looks, never over %d MiB; the refusals: %q", ns, looks, limit, msgs)
	return strings.Join(msgs, "\n")
}

// withinLimit checks that ns holds no more than limit MiB of GPU memory:
// its live pods recounted, and the webhook's ledger (used plus reserved).
func withinLimit(ctx context.Context, c *local.Cluster, ns string, limit int64) error {
	live, err := c.Recount(ctx, ns)
	if err != nil {
		return err
	}
	if used := live.Used.Of("nvidia").MemMiB; used > limit {
		return fmt.Errorf("%s holds pods of %d MiB, over its limit of %d MiB", ns, used, limit)
	}
	s := c.Namespace(ns)
	if held := s.Used.Of("nvidia").MemMiB + s.Reserved.Of("nvidia").MemMiB; held > limit {
		return fmt.Errorf("the ledger of %s holds %d MiB (used %s, reserved %s), over its limit of %d MiB", ns, held, s.Used, s.Reserved, limit)
	}
	return nil
}

// seed creates ns with a gpumem quota of limit MiB and waits until the
// webhook's ledger knows the limit.
func seed(t *testing.T, c *local.Cluster, ns string, limit int64) {
	t.Helper()
	if err := c.Seed(t.Context(), ns, fmt.Sprint(limit)); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Limits["nvidia"].MemMiB != nil })
}

// awaitRecount waits until the webhook's ledger of ns equals a recount of
// the API server's objects, with nothing reserved, and returns it.
func awaitRecount(t *testing.T, c *local.Cluster, ns string) ledger.NamespaceSnapshot {
	t.Helper()
	want, err := c.Recount(t.Context(), ns)
	if err != nil {
		t.Fatal(err)
	}
	return local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Pods == want.Pods && s.Used.Equal(want.Used)
	})
}

// awaitPods waits until ns holds exactly n pods labelled app=app (none of
// them being deleted) and returns their names (in the API server's order:
// by name).
func awaitPods(t *testing.T, c *local.Cluster, ns, app string, n int) []string {
	t.Helper()
	var names []string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			return false, err
		}
		names = names[:0]
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		return len(names) == n, nil
	})
	if err != nil {
		t.Fatalf("%s: want %d pods of %s, have %v: %v", ns, n, app, names, err)
	}
	return names
}

// countPods counts the pods labelled app=app in ns.
func countPods(t *testing.T, c *local.Cluster, ns, app string) int {
	t.Helper()
	pods, err := c.Kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

// apply applies obj with the built kubectl, as a user does, and returns
// what kubectl printed on stderr (its warnings).
func apply(t *testing.T, c *local.Cluster, obj any) string {
	t.Helper()
	stdout, stderr, err := c.Kubectl(t.Context(), manifest(t, obj), "apply", "-f", "-")
	if err != nil {
		t.Fatalf("kubectl apply: %v; stdout %q stderr %q", err, stdout, stderr)
	}
	return stderr
}

// runPod plays the scheduler and the kubelet: pod is bound to node1 and its
// containers run.
func runPod(t *testing.T, c *local.Cluster, ns, pod string) {
	t.Helper()
	if err := c.Bind(t.Context(), ns, pod, local.NodeName); err != nil {
		t.Fatal(err)
	}
	if err := c.InitsDone(t.Context(), ns, pod); err != nil {
		t.Fatal(err)
	}
}
