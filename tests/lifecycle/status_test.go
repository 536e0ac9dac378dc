package lifecycle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// gpuUsage reads ns's GPUUsage through c (nil: not found).
func gpuUsage(ctx context.Context, c client.Client, ns string) (*gpuadmitv1.GPUUsage, error) {
	u := &gpuadmitv1.GPUUsage{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, u)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return u, err
}

func usageClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testStatusFollowsLifecycle: the GPUUsage status, what `kubectl get
// gpuusage` shows, follows a pod through its lifecycle within 2 s of each
// change: the init peak while the init container runs, the app's demand
// once it finished, nothing once the pod is gone.
func testStatusFollowsLifecycle(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "status"
	if err := c.Seed(ctx, ns, "16384"); err != nil {
		t.Fatal(err)
	}
	cl := usageClient(t, c.Config)
	within := func(step, want string) {
		t.Helper()
		start := time.Now()
		for {
			u, err := gpuUsage(ctx, cl, ns)
			if err != nil {
				t.Fatal(err)
			}
			if u != nil && u.Status.Summary.GPUMem == want {
				t.Logf("%s: GPUMEM %s after %s", step, want, time.Since(start).Round(10*time.Millisecond))
				return
			}
			if time.Since(start) > 2*time.Second {
				got := "(no object)"
				if u != nil {
					got = u.Status.Summary.GPUMem
				}
				t.Fatalf("%s: GPUMEM is %s 2 s after the change, want %s", step, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	within("a namespace with a limit and no pod", "0/16384")
	if err := c.CreatePod(ctx, creates.WithInit(creates.GPUPod(ns, "trainer", "", 4096), 12288)); err != nil {
		t.Fatal(err)
	}
	if err := c.Bind(ctx, ns, "trainer", local.NodeName); err != nil {
		t.Fatal(err)
	}
	if err := c.InitRunning(ctx, ns, "trainer"); err != nil {
		t.Fatal(err)
	}
	within("init container running", "12288/16384")
	if err := c.InitsDone(ctx, ns, "trainer"); err != nil {
		t.Fatal(err)
	}
	within("init container finished", "4096/16384")
	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "trainer", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	within("pod deleted", "0/16384")

	u, err := gpuUsage(ctx, cl, ns)
	if err != nil {
		t.Fatal(err)
	}
	mem := u.Status.Resources[1]
	if mem.Resource != "nvidia.com/gpumem" || mem.Hard == nil || *mem.Hard != 16384 || mem.ResourceQuota == "" {
		t.Errorf("gpumem usage %+v", mem)
	}
	table, stderr, err := c.Kubectl(ctx, nil, "get", "gpuusage", "-n", ns)
	if err != nil {
		t.Fatalf("kubectl get gpuusage: %v: %s", err, stderr)
	}
	local.MustContain(t, "kubectl get gpuusage", table, "GPU", "GPUMEM", "GPUCORES", "AGE", "0/16384")
}

// testViewCanReadNotWrite: a namespace user holding the role aggregated to
// `view` reads the namespace's GPUUsage but can neither update its status
// nor delete it. (The ClusterRole carries the aggregate-to-view label; the
// aggregation itself is done by kube-controller-manager, which this
// control plane does not run, so the user is bound to the role directly.)
func testViewCanReadNotWrite(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns, user = "status", "alice@example.com"
	if _, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", "../../manifests/webhook/rbac.yaml"); err != nil {
		t.Fatalf("installing gpuadmit's RBAC: %v: %s", err, stderr)
	}
	role, err := c.Kube.RbacV1().ClusterRoles().Get(ctx, "gpuadmit-gpuusage-view", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if role.Labels["rbac.authorization.k8s.io/aggregate-to-view"] != "true" {
		t.Fatalf("gpuadmit-gpuusage-view is not aggregated to view: %v", role.Labels)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-view-gpuusage", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}}}
	if _, err := c.Kube.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	alice := usageClient(t, cfg)
	var u *gpuadmitv1.GPUUsage
	deadline := time.Now().Add(10 * time.Second) // RBAC caches take a moment
	for u, err = gpuUsage(ctx, alice, ns); err != nil || u == nil; u, err = gpuUsage(ctx, alice, ns) {
		if time.Now().After(deadline) {
			t.Fatalf("alice cannot read the GPUUsage of %s: %v", ns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	edited := u.DeepCopy()
	edited.Status.Summary.GPUMem = "0/999999"
	for what, err := range map[string]error{
		"update the status": alice.Status().Update(ctx, edited),
		"update":            alice.Update(ctx, edited),
		"delete":            alice.Delete(ctx, u),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("alice could %s: %v", what, err)
		}
	}
	if _, stderr, err := c.Kubectl(ctx, nil, "--as", user, "get", "gpuusage", "-n", ns); err != nil {
		t.Errorf("kubectl --as %s get gpuusage: %v: %s", user, err, stderr)
	}
	if _, stderr, err := c.Kubectl(ctx, nil, "--as", user, "delete", "gpuusage", "usage", "-n", ns); err == nil ||
		!strings.Contains(stderr, "forbidden") {
		t.Errorf("kubectl --as %s delete gpuusage: want forbidden, got %v: %s", user, err, stderr)
	}
	viewCannotWriteReservations(t, c, alice, ns)
	t.Logf("%s read GPUUsage and GPUReservationSet %s/usage and was refused update, status update and delete", user, ns)
}

// viewCannotWriteReservations: the same user reads the namespace's
// GPUReservationSet (the CLI counts its reservations) but can neither
// empty its reservations nor delete it.
func viewCannotWriteReservations(t *testing.T, c *local.Cluster, alice client.Client, ns string) {
	t.Helper()
	ctx := t.Context()
	admin := usageClient(t, c.Config)
	set := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gpuadmitv1.ObjectName}}
	if err := admin.Create(ctx, set); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	got := &gpuadmitv1.GPUReservationSet{}
	if err := alice.Get(ctx, client.ObjectKeyFromObject(set), got); err != nil {
		t.Fatalf("alice cannot read the GPUReservationSet of %s: %v", ns, err)
	}
	edited := got.DeepCopy()
	edited.Status.Reservations, edited.Status.RemovedResourceVersion = nil, "1"
	for what, err := range map[string]error{
		"update the reservations": alice.Status().Update(ctx, edited),
		"update":                  alice.Update(ctx, edited),
		"delete":                  alice.Delete(ctx, got),
	} {
		if !apierrors.IsForbidden(err) {
			t.Errorf("alice could %s the GPUReservationSet: %v", what, err)
		}
	}
}
