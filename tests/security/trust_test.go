package security_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// asEditor is a client acting as a namespace user who may do to pods what
// the edit role allows (the edit ClusterRole itself is filled by the
// controller manager's aggregation, which does not run here).
func asEditor(t *testing.T, c *local.Cluster, ns, user string) kubernetes.Interface {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-editor", Namespace: ns},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"},
			Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if _, err := c.Kube.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-edit", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's RBAC cache takes a moment (longer on a busy
	// machine) to hold the new binding: wait until it says the user may
	// patch pods here.
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "patch", Resource: "pods"}}}
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := k.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("%s was bound to pod-editor in %s, but the API server does not let it patch pods: %v", user, ns, err)
	}
	return k
}

// TestEditsDoNotLowerCharges: the two attacks found on a real API server,
// as the users who could make them. A whole-card pod bound to a node with
// an H200 (143771 MiB) and a MIG 1g.18gb slice (16384 MiB) is charged the
// H200; then (a) a namespace user with edit rewrites its device annotation
// to the MIG slice, (b) the node's capacity annotation is rewritten to
// 16384 MiB. After each, the namespace's used figure is unchanged, a
// 120000 MiB pod is still denied (before: admitted, 263771 MiB in use
// against a 143771 MiB limit), and the GPUUsage condition InputsTrusted
// says so.
func TestEditsDoNotLowerCharges(t *testing.T) {
	const h200, mig = 143771, 16384
	c := startOpen(t)
	ctx := t.Context()
	node := func(h200MiB int64) *corev1.Node {
		return testnode.WithDevices("gpu-node", nil,
			devices.Device{UUID: "GPU-h200", Index: 0, Model: "NVIDIA H200", MemoryMiB: h200MiB, Cores: 100, Healthy: true},
			devices.Device{UUID: "MIG-1g", Index: 1, Model: "NVIDIA H200 MIG 1g.18gb", MemoryMiB: mig, Cores: 100, Healthy: true})
	}
	n := node(h200)
	n.UID = ""
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateNamespace(ctx, "team-a", nil); err != nil {
		t.Fatal(err)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "team-a"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpumem": *resourceMiB(h200)}}}
	if _, err := c.Kube.CoreV1().ResourceQuotas("team-a").Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitLedger(ctx, "team-a", func(s ledgerView) bool { return s.Limits["nvidia"].MemMiB != nil && s.LabelsKnown }); err != nil {
		t.Fatal(err)
	}
	whole := testpod.New("whole").NS("team-a").App("c", testpod.GPU(1)).Build()
	whole.UID = ""
	if err := createPod(ctx, c, whole); err != nil {
		t.Fatalf("the whole-card pod: %v", err)
	}
	// Play HAMi's scheduler: assign the H200, then bind.
	annotate(t, c.Kube, "team-a", "whole", "GPU-h200,NVIDIA,143771,100:;")
	if err := c.Bind(ctx, "team-a", "whole", "gpu-node"); err != nil {
		t.Fatal(err)
	}
	charged := func(what string) {
		t.Helper()
		time.Sleep(time.Second) // the watches deliver the edit
		s, err := c.WaitLedger(ctx, "team-a", func(s ledgerView) bool { return len(s.Problems) > 0 })
		if err != nil {
			t.Fatalf("%s: not reported: %v", what, err)
		}
		if s.Used.Of("nvidia").MemMiB != h200 {
			t.Fatalf("%s: charged %d MiB, want still %d", what, s.Used.Of("nvidia").MemMiB, h200)
		}
		err = createPod(ctx, c, creates.GPUPod("team-a", fmt.Sprint("big-", time.Now().UnixNano()), "", 120000))
		if err == nil || !strings.Contains(err.Error(), "limit 143771 MiB") {
			t.Fatalf("%s: a 120000 MiB pod: %v; want denied", what, err)
		}
	}
	if _, err := c.WaitLedger(ctx, "team-a", func(s ledgerView) bool { return s.Used.Of("nvidia").MemMiB == h200 && s.Pods == 1 }); err != nil {
		t.Fatal(err)
	}

	// (a) A namespace user with edit rewrites the device annotation.
	annotate(t, asEditor(t, c, "team-a", "mallory"), "team-a", "whole", "MIG-1g,NVIDIA,16384,100:;")
	charged("annotation rewritten by an editor")

	// (b) The node's capacity annotation rewritten to 16384 MiB.
	n, err := c.Kube.CoreV1().Nodes().Get(ctx, "gpu-node", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Annotations[devices.NodeDevicesAnnotation] = node(mig).Annotations[devices.NodeDevicesAnnotation]
	if _, err := c.Kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	charged("node capacity rewritten")

	deadline := time.Now().Add(10 * time.Second)
	for {
		u, _ := c.Usage(ctx, "team-a")
		if u != nil {
			if cond := meta.FindStatusCondition(u.Status.Conditions, gpuadmitv1.ConditionInputsTrusted); cond != nil &&
				cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, "team-a/whole") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GPUUsage team-a/usage does not report the held charge: %+v", u)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// annotate sets the pod's hami.io/vgpu-devices-allocated with k.
func annotate(t *testing.T, k kubernetes.Interface, ns, pod, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, devices.PodAllocatedAnnotation, value)
	if _, err := k.CoreV1().Pods(ns).Patch(context.Background(), pod, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating pod %s/%s: %v", ns, pod, err)
	}
}

func resourceMiB(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
