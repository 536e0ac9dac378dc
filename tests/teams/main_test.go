// Package teams_test is the integration suite of team quotas
// (GPUClusterQuota) on a real kube-apiserver and etcd (internal/cluster/local)
// with the webhook server wired by pkg/server as cmd/webhook wires it:
// namespaces ml-dev (selected by its label) and ml-train (named) in team
// ml (4 GPUs, 48 GiB), each with its own larger ResourceQuota: pods are
// admitted until the team's limit, then denied in either namespace with a
// message naming the team quota; a namespace outside the team is
// unaffected; concurrent creates over two namespaces of one team never pass
// it; kubectl get gcq shows the team's usage.
//
// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package teams_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// TestTeams runs every scenario on one control plane.
func TestTeams(t *testing.T) {
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	ctx := t.Context()
	t.Run("team ml: admitted until its limit, then denied in either namespace", func(t *testing.T) { testTeamLimit(ctx, t, c) })
	t.Run("concurrent creates over two namespaces of one team never pass it", func(t *testing.T) { testTeamBurst(ctx, t, c) })
}

// seed creates namespace ns with labels and a ResourceQuota far above the
// team's limits (and, once, the node).
func seed(ctx context.Context, t *testing.T, c *local.Cluster, ns string, labels map[string]string) {
	t.Helper()
	if err := c.Seed(ctx, ns, "98304"); err != nil {
		t.Fatal(err)
	}
	if len(labels) > 0 {
		n, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Labels = labels
		if _, err := c.Kube.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// createQuota creates GPUClusterQuota name over the namespaces labelled
// team=<name> and those named, with hard, and waits until the server's
// ledger selects want.
func createQuota(ctx context.Context, t *testing.T, c *local.Cluster, name string, named []string, hard map[string]string, want ...string) {
	t.Helper()
	q := &gpuadmitv1.GPUClusterQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gpuadmitv1.GPUClusterQuotaSpec{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": name}}, Namespaces: named, Hard: corev1.ResourceList{}}}
	for k, v := range hard {
		q.Spec.Hard[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	if err := apiClient(t, c).Create(ctx, q); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := c.Server.Ledger.Selected(name)
		if _, ok := c.Server.Ledger.ClusterQuota(name); ok && fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's ledger selects %v for %s, want %v", got, name, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func apiClient(t *testing.T, c *local.Cluster) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// teamUsed is the devices charged in namespaces by a ledger built from
// scratch out of what the API server holds now.
func teamUsed(ctx context.Context, t *testing.T, c *local.Cluster, namespaces ...string) (devices, mib int64) {
	t.Helper()
	for _, ns := range namespaces {
		s, err := c.Recount(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		devices += s.Used.Of("nvidia").GPU
		mib += s.Used.Of("nvidia").MemMiB
	}
	return devices, mib
}

func testTeamLimit(ctx context.Context, t *testing.T, c *local.Cluster) {
	seed(ctx, t, c, "ml-dev", map[string]string{"team": "ml"})
	seed(ctx, t, c, "ml-train", nil)
	seed(ctx, t, c, "outside", nil)
	createQuota(ctx, t, c, "ml", []string{"ml-train"}, map[string]string{"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpumem": "49152"},
		"ml-dev", "ml-train")
	for i, ns := range []string{"ml-dev", "ml-train", "ml-dev", "ml-train"} {
		if err := c.CreatePod(ctx, creates.GPUPod(ns, fmt.Sprintf("p-%d", i), "", 12288)); err != nil {
			t.Fatalf("pod %d in %s (the team has room): %v", i, ns, err)
		}
	}
	for _, ns := range []string{"ml-dev", "ml-train"} {
		err := c.CreatePod(ctx, creates.GPUPod(ns, "one-more", "", 12288))
		if err == nil {
			t.Fatalf("a fifth pod admitted in %s past team ml's 4 GPUs", ns)
		}
		local.MustContain(t, "denial in "+ns, err.Error(), `GPUClusterQuota "ml"`, "limit 4")
	}
	if d, m := teamUsed(ctx, t, c, "ml-dev", "ml-train"); d > 4 || m > 49152 {
		t.Fatalf("team ml charged %d devices, %d MiB: over its limit", d, m)
	}
	// A namespace outside the team is decided against its own quota only.
	for i := range 5 {
		if err := c.CreatePod(ctx, creates.GPUPod("outside", fmt.Sprintf("o-%d", i), "", 12288)); err != nil {
			t.Fatalf("pod %d outside the team: %v", i, err)
		}
	}
	awaitKubectl(ctx, t, c, []string{"get", "gcq", "ml"}, "ml", "2", "4/4", "49152/49152")
	// Every pod was created by the suite's one user: stamped with it, it
	// holds the team's 4 devices, 2 of them in ml-dev.
	awaitKubectl(ctx, t, c, []string{"get", "gpuclusterquota", "ml", "-o", "wide"}, "USERS", "=4")
	awaitKubectl(ctx, t, c, []string{"get", "gpuusage", "-n", "ml-dev", "-o", "wide"}, "USERS", "2/-", "=2")
}

// awaitKubectl runs kubectl with args until its output holds every want
// (the elected summarizer writes at most once a second).
func awaitKubectl(ctx context.Context, t *testing.T, c *local.Cluster, args []string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, errOut, err := c.Kubectl(ctx, nil, args...)
		missing := ""
		for _, w := range want {
			if !strings.Contains(out, w) {
				missing = w
			}
		}
		if err == nil && missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl %s: %q missing; stdout %q stderr %q err %v", strings.Join(args, " "), missing, out, errOut, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func testTeamBurst(ctx context.Context, t *testing.T, c *local.Cluster) {
	seed(ctx, t, c, "burst-a", map[string]string{"team": "burst"})
	seed(ctx, t, c, "burst-b", map[string]string{"team": "burst"})
	createQuota(ctx, t, c, "burst", nil, map[string]string{"limits.nvidia.com/gpu": "6"}, "burst-a", "burst-b")
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan string, 40)
	for i := range 40 {
		ns := []string{"burst-a", "burst-b"}[i%2]
		wg.Go(func() {
			if _, err := kube.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("b-%02d", i), "", 1024), metav1.CreateOptions{}); err == nil {
				admitted.Add(1)
			} else if !strings.Contains(err.Error(), `GPUClusterQuota "burst"`) {
				errs <- err.Error()
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("refused for another reason than the team quota: %s", e)
	}
	if admitted.Load() != 6 {
		t.Fatalf("admitted %d pods over the team's two namespaces, want exactly 6", admitted.Load())
	}
	if d, _ := teamUsed(ctx, t, c, "burst-a", "burst-b"); d != 6 {
		t.Fatalf("recount: %d devices charged to team burst, want 6", d)
	}
}
