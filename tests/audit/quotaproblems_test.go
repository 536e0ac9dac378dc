package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestQuotaProblems: a ResourceQuota gpuadmit does not enforce as written
// is never silent. Its memory limit in bytes (24Gi) is enforced as 24576
// MiB: a 30000 MiB pod is denied by the webhook (read as 25769803776 MiB it
// was admitted), a 20000 MiB pod admitted. That reading and a limit on a
// family gpuadmit does not govern (hygon's dcumem, no hygon section) show
// in the namespace's GPUUsage conditions (kubectl get gpuusage -o yaml)
// and as one Warning Event each on the ResourceQuota (kubectl get events),
// not one per round of the summaries. (A limit that is not whole,
// 1.5, is refused by the API server for an extended resource: only files
// the command line reads hold one.)
func TestQuotaProblems(t *testing.T) {
	const qns = "quota-problems"
	c := local.ForTest(t, "../../manifests/webhook", local.DefaultWebhook)
	ctx := t.Context()
	cl := newClient(t, c)
	if err := c.CreateNamespace(ctx, qns, nil); err != nil {
		t.Fatal(err)
	}
	quota := testquota.New(qns, "gpu", map[string]string{"limits.nvidia.com/gpumem": "24Gi", "limits.hygon.com/dcumem": "8000"})
	quota.UID = ""
	if _, err := c.Kube.CoreV1().ResourceQuotas(qns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, qns, func(s ledger.NamespaceSnapshot) bool { return len(s.Quotas) == 1 })

	err := c.CreatePod(ctx, testpod.New("big").NS(qns).App("main", testpod.GPU(1), testpod.Mem(30000)).Build())
	local.MustContain(t, "a 30000 MiB pod under a 24Gi limit", fmt.Sprint(err), "denied the request", "30000 MiB", "limit 24576 MiB")
	if err := c.CreatePod(ctx, testpod.New("small").NS(qns).App("main", testpod.GPU(1), testpod.Mem(20000)).Build()); err != nil {
		t.Fatalf("a 20000 MiB pod under a 24Gi limit: %v", err)
	}

	const (
		bytes = `quota quota-problems/gpu: limits.nvidia.com/gpumem "24Gi": a memory limit in bytes: enforced as 24576 MiB`
		hygon = `ungoverned quota-problems/gpu: limits.hygon.com/dcumem "8000": a resource of the hygon device family, which gpuadmit does not govern`
	)
	poll(t, "GPUUsage conditions QuotasValid and QuotasEnforced False", func() string {
		var u gpuadmitv1.GPUUsage
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: qns, Name: gpuadmitv1.ObjectName}, &u); err != nil {
			return err.Error()
		}
		valid := meta.FindStatusCondition(u.Status.Conditions, gpuadmitv1.ConditionQuotasValid)
		enforced := meta.FindStatusCondition(u.Status.Conditions, gpuadmitv1.ConditionQuotasEnforced)
		if valid == nil || valid.Status != metav1.ConditionFalse || !strings.Contains(valid.Message, bytes) ||
			enforced == nil || enforced.Status != metav1.ConditionFalse || enforced.Reason != "UngovernedQuotaKey" || !strings.Contains(enforced.Message, hygon) {
			return fmt.Sprintf("conditions %+v", u.Status.Conditions)
		}
		return ""
	})
	out, stderr, err := c.Kubectl(ctx, nil, "get", "gpuusage", "-n", qns, "-o", "yaml")
	if err != nil {
		t.Fatalf("kubectl get gpuusage -o yaml: %v: %s", err, stderr)
	}
	local.MustContain(t, "kubectl get gpuusage -o yaml", strings.Join(strings.Fields(out), " "), "type: QuotasEnforced", "reason: UngovernedQuotaKey",
		"type: QuotasValid", `limits.hygon.com/dcumem "8000": a resource of the hygon device family`, `limits.nvidia.com/gpumem "24Gi": a memory limit in bytes`)

	want := map[string]string{
		"limits.nvidia.com/gpumem": "QuotaValueNotAsWritten", "limits.hygon.com/dcumem": "UngovernedQuotaKey",
	}
	poll(t, "one Warning Event per problem on the ResourceQuota", func() string { return quotaEvents(ctx, c, qns, want) })
	// Two more rounds of the summaries, each shown by a GPUUsage written
	// with the namespace's new usage (the Events are recorded in the same
	// round): the problems last, and no Event is recorded again.
	for i, used := range []int64{21024, 22048} {
		if err := c.CreatePod(ctx, testpod.New(fmt.Sprint("more-", i)).NS(qns).App("main", testpod.GPU(1), testpod.Mem(1024)).Build()); err != nil {
			t.Fatalf("a 1024 MiB pod beside 20000 MiB under a 24Gi limit: %v", err)
		}
		poll(t, fmt.Sprintf("GPUUsage with %d MiB used", used), func() string { return usedMiB(ctx, cl, qns, used) })
		if last := quotaEvents(ctx, c, qns, want); last != "" {
			t.Fatal(last)
		}
	}
	out, stderr, err = c.Kubectl(ctx, nil, "get", "events", "-n", qns, "--field-selector", "involvedObject.kind=ResourceQuota,involvedObject.name=gpu")
	if err != nil {
		t.Fatalf("kubectl get events: %v: %s", err, stderr)
	}
	local.MustContain(t, "kubectl get events of the ResourceQuota", out, "Warning", "UngovernedQuotaKey", "QuotaValueNotAsWritten", "resourcequota/gpu")
}

// quotaEvents says how the Events on the ResourceQuota gpu of ns differ
// from one Warning Event (count 1) of the reason want names per key ("":
// they do not).
func quotaEvents(ctx context.Context, c *local.Cluster, ns string, want map[string]string) string {
	list, err := c.Kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=ResourceQuota,involvedObject.name=gpu"})
	if err != nil {
		return err.Error()
	}
	seen := map[string]int{}
	var all []string
	for _, e := range list.Items {
		all = append(all, fmt.Sprintf("%s %s x%d: %s", e.Type, e.Reason, e.Count, e.Message))
		for key, reason := range want {
			if strings.HasPrefix(e.Message, key+" ") && e.Reason == reason && e.Type == corev1.EventTypeWarning && e.InvolvedObject.UID != "" {
				seen[key] += max(int(e.Count), 1)
			}
		}
	}
	for key := range want {
		if seen[key] != 1 {
			return fmt.Sprintf("%d Events for %s, want 1: %q", seen[key], key, all)
		}
	}
	return ""
}

// usedMiB says how the GPU memory used in ns's GPUUsage differs from want
// ("": it does not).
func usedMiB(ctx context.Context, cl client.Client, ns string, want int64) string {
	var u gpuadmitv1.GPUUsage
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, &u); err != nil {
		return err.Error()
	}
	for _, r := range u.Status.Resources {
		if r.Resource == "nvidia.com/gpumem" && r.Used == want {
			return ""
		}
	}
	return fmt.Sprintf("resources %+v", u.Status.Resources)
}
