package workloads_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// testPerUser: alice and bob each create a Deployment of 3 one-GPU pods in
// a namespace where a GPUClusterQuota allows each user 2 GPUs. The
// Deployment and ReplicaSet controllers create the pods, yet each pod is
// charged to the user whose Deployment made it: each user stops at 2
// (never 3, at any moment), the third pod refused naming the user. An
// edit of the stamp of alice's running pod is undone. Then
// bob writes alice's name, with a signature copied from one of alice's
// pods, into his own Deployment's template: the stamp is overwritten with
// his name, and the pod is refused as his, alice's pods untouched.
func testPerUser(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "peruser"
	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	createPerUserQuota(t, c, ns, 2)
	users := map[string]kubernetes.Interface{}
	for _, u := range []string{"alice", "bob"} {
		users[u] = impersonating(t, c, ns, u)
		if _, err := users[u].AppsV1().Deployments(ns).Create(ctx, deployment(ns, u+"-train", 3, 1024), metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s's Deployment: %v", u, err)
		}
	}
	for _, u := range []string{"alice", "bob"} {
		waitCapped(t, c, ns, u+"-train", 2, `user "`+u+`" in GPUClusterQuota "peruser"`)
	}
	stamper := stamperOf(t, c)
	alicePods := podsOf(t, c, ns, "alice-train")
	for _, p := range alicePods {
		if user := stamper.UserOf(&p); user != "alice" {
			t.Errorf("pod %s is charged to %q, want alice", p.Name, user)
		}
	}
	// An edit of a running pod's stamp (here to bob's valid stamp, copied
	// from his pod) is put back by the webhook.
	bobSig := podsOf(t, c, ns, "bob-train")[0].Annotations[stamp.SignatureAnnotation]
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"bob",%q:%q}}}`, stamp.UserAnnotation, stamp.SignatureAnnotation, bobSig)
	edited, err := c.Kube.CoreV1().Pods(ns).Patch(ctx, alicePods[0].Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("editing alice's pod's stamp: %v", err)
	}
	if user := stamper.UserOf(edited); user != "alice" {
		t.Errorf("alice's pod after an edit of its stamp is charged to %q, want alice", user)
	}
	forged := deployment(ns, "bob-forged", 1, 1024)
	forged.Spec.Template.Annotations = map[string]string{stamp.UserAnnotation: "alice",
		stamp.SignatureAnnotation: alicePods[0].Annotations[stamp.SignatureAnnotation]}
	got, err := users["bob"].AppsV1().Deployments(ns).Create(ctx, forged, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bob's forged Deployment: %v", err)
	}
	if user, ok := stamper.Verified(ns, got.Spec.Template.Annotations); !ok || user != "bob" {
		t.Errorf("bob's template naming alice is stamped %q (verifies: %v), want bob", got.Spec.Template.Annotations[stamp.UserAnnotation], ok)
	}
	waitCapped(t, c, ns, "bob-forged", 0, `user "bob" in GPUClusterQuota "peruser"`)
	if n := len(podsOf(t, c, ns, "alice-train")); n != 2 {
		t.Errorf("alice has %d pods after bob's forgery, want 2", n)
	}
	templatesWithoutGPU(t, users["bob"], ns, alicePods[0].Annotations)
}

// templatesWithoutGPU: the real API server's matchCondition sends a
// template that asks for no GPU to the stamping webhook only when it
// carries a stamp. bob's copy of alice's stamp in such a template is
// overwritten with his own (a GPU added at the pod's CREATE, by a
// LimitRange or another webhook, cannot then be charged to alice); a
// template with neither is left alone (no stamp written: the webhook never
// saw it, so workloads without GPUs do not depend on gpuadmit).
func templatesWithoutGPU(t *testing.T, bob kubernetes.Interface, ns string, alices map[string]string) {
	t.Helper()
	copied := cpuDeployment(ns, "bob-cpu-copied")
	copied.Spec.Template.Annotations = map[string]string{stamp.UserAnnotation: alices[stamp.UserAnnotation],
		stamp.SignatureAnnotation: alices[stamp.SignatureAnnotation]}
	got, err := bob.AppsV1().Deployments(ns).Create(t.Context(), copied, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bob's CPU Deployment with alice's stamp: %v", err)
	}
	if user := got.Spec.Template.Annotations[stamp.UserAnnotation]; user != "bob" {
		t.Errorf("bob's CPU template carrying alice's stamp is stamped %q, want bob", user)
	}
	plain, err := bob.AppsV1().Deployments(ns).Create(t.Context(), cpuDeployment(ns, "bob-cpu"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("bob's CPU Deployment: %v", err)
	}
	if a := plain.Spec.Template.Annotations; a[stamp.UserAnnotation] != "" || a[stamp.SignatureAnnotation] != "" {
		t.Errorf("a CPU template without a stamp was sent to the stamping webhook: stamped %q", a)
	}
}

// cpuDeployment is a Deployment of no replicas whose template asks for no
// GPU.
func cpuDeployment(ns, name string) *appsv1.Deployment {
	d := deployment(ns, name, 0, 0)
	for i := range d.Spec.Template.Spec.Containers {
		d.Spec.Template.Spec.Containers[i].Resources = corev1.ResourceRequirements{}
	}
	return d
}

// createPerUserQuota limits each user to gpus GPUs in ns.
func createPerUserQuota(t *testing.T, c *local.Cluster, ns string, gpus int64) {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	q := &gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: gpuadmitv1.GPUClusterQuotaSpec{Namespaces: []string{ns},
			PerUser: corev1.ResourceList{"limits.nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI)}}}
	if err := cl.Create(t.Context(), q); err != nil {
		t.Fatalf("creating the GPUClusterQuota: %v", err)
	}
	// The webhook decides against it once its informer has it.
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		_, ok := c.Server.Ledger.ClusterQuota(ns)
		return ok, nil
	})
	if err != nil {
		t.Fatalf("the ledger never read GPUClusterQuota %s: %v", ns, err)
	}
}

// impersonating is a client acting as user, who may write Deployments
// and read pods in ns.
func impersonating(t *testing.T, c *local.Cluster, ns, user string) kubernetes.Interface {
	t.Helper()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"*"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := c.Kube.RbacV1().Roles(ns).Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(t.Context(), rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The API server's authorizer learns of the RoleBinding through its
	// informer: wait until it lets the user create Deployments (a create
	// right after the binding was refused once on a busy machine).
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "create", Group: "apps", Resource: "deployments"}}}
	err = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && got.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("%s may not create Deployments in %s 30s after the RoleBinding: %v", user, ns, err)
	}
	return kube
}

// stamperOf verifies stamps with the key the webhook made.
func stamperOf(t *testing.T, c *local.Cluster) *stamp.Stamper {
	t.Helper()
	key, err := stamp.LoadKey(t.Context(), c.Kube.CoreV1(), c.Options().Namespace)
	if err != nil {
		t.Fatal(err)
	}
	s, err := stamp.New(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// podsOf lists the pods labelled app=name in ns.
func podsOf(t *testing.T, c *local.Cluster, ns, name string) []corev1.Pod {
	t.Helper()
	pods, err := c.Kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// waitCapped waits until the Deployment name has want pods and its
// ReplicaSet's creation of one more was refused naming who, failing if it
// ever has more than want pods.
func waitCapped(t *testing.T, c *local.Cluster, ns, name string, want int, who string) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		n := len(podsOf(t, c, ns, name))
		if n > want {
			return false, fmt.Errorf("%s has %d pods, more than %d", name, n, want)
		}
		events, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range events.Items {
			if e.Reason == "FailedCreate" && strings.HasPrefix(e.InvolvedObject.Name, name+"-") {
				last = e.Message
				if strings.Contains(e.Message, who) {
					return n == want, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: %v (its ReplicaSet's last FailedCreate: %q)", name, err, last)
	}
}
