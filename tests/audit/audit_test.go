package audit_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/openreports"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

const ns = "team-a"

// TestLoweredQuota admits two pods of 4096 MiB under a limit of 16384,
// lowers the ResourceQuota to 6144 (under the 8192 used): the namespace is
// reported over in its GPUUsage condition, the metric and its Report
// (nothing is evicted, a third pod is denied); deleting one pod brings it
// back within, and all three say so again.
func TestLoweredQuota(t *testing.T) {
	port := local.FreeLoopbackPort(t)
	c := local.ForTest(t, "../../manifests/webhook", func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.Config.Audit.OpenReports = ptr.To(true)
		o.MetricsAddr, o.Registry = fmt.Sprintf("127.0.0.1:%d", port), metrics.Registry
		return &o
	})
	ctx := t.Context()
	cl := newClient(t, c)
	token, err := c.MetricsToken(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	scrapeURL := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)

	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	quota := testquota.New(ns, "gpu", map[string]string{"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpumem": "16384"})
	quota.UID = ""
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, quota, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return len(s.Quotas) == 1 })
	for _, name := range []string{"a", "b"} {
		if err := c.CreatePod(ctx, testpod.New(name).NS(ns).App("main", testpod.GPU(1), testpod.Mem(4096)).Build()); err != nil {
			t.Fatalf("admitting pod %s: %v", name, err)
		}
	}
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Pods == 2 && s.Reservations == 0 })

	// The CRD arrives after gpuadmit started: the writer keeps trying.
	installReportsCRD(t, c)
	awaitCondition(t, cl, metav1.ConditionTrue, "usage is within every GPU limit")
	awaitReport(t, cl, reportsv1alpha1.ReportSummary{Pass: 2}, "")
	if series := overLimit(t, scrapeURL, token); len(series) != 0 {
		t.Fatalf("within its limits, over-limit series: %v", series)
	}

	setMemLimit(t, c, "6144")
	const over = "nvidia.com/gpumem: 8192 MiB charged (8192 used, 0 reserved), over the limit 6144 MiB of ResourceQuota gpu"
	awaitCondition(t, cl, metav1.ConditionFalse, over)
	awaitReport(t, cl, reportsv1alpha1.ReportSummary{Pass: 1, Fail: 1}, over)
	awaitMetric(t, scrapeURL, token, true)
	err = c.CreatePod(ctx, testpod.New("c").NS(ns).App("main", testpod.GPU(1), testpod.Mem(1)).Build())
	local.MustContain(t, "a pod in the namespace over its limit", fmt.Sprint(err), "limits.nvidia.com/gpumem")
	local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Pods == 2 }) // nothing evicted

	if err := c.Kube.CoreV1().Pods(ns).Delete(ctx, "b", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	awaitCondition(t, cl, metav1.ConditionTrue, "usage is within every GPU limit")
	awaitReport(t, cl, reportsv1alpha1.ReportSummary{Pass: 2}, "")
	awaitMetric(t, scrapeURL, token, false)
}

func newClient(t *testing.T, c *local.Cluster) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := gpuadmitv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := reportsv1alpha1.Install(s); err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// installReportsCRD installs reports.openreports.io from the module gpuadmit builds against.
func installReportsCRD(t *testing.T, c *local.Cluster) {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/openreports/reports-api").Output()
	if err != nil {
		t.Fatalf("finding the reports-api module: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "openreports.io_reports.yaml")
	if _, err := envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}); err != nil {
		t.Fatalf("installing %s: %v", path, err)
	}
}

func setMemLimit(t *testing.T, c *local.Cluster, v string) {
	t.Helper()
	q, err := c.Kube.CoreV1().ResourceQuotas(ns).Get(t.Context(), "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	q.Spec.Hard["limits.nvidia.com/gpumem"] = resource.MustParse(v)
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Update(t.Context(), q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// poll calls f every 100 ms until it returns "" (done) or 40 s pass,
// then fails with f's last word.
func poll(t *testing.T, what string, f func() string) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		last := f()
		if last == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 40s: %s", what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func awaitCondition(t *testing.T, cl client.Client, status metav1.ConditionStatus, message string) {
	t.Helper()
	poll(t, "GPUUsage condition WithinLimits "+string(status), func() string {
		var u gpuadmitv1.GPUUsage
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: gpuadmitv1.ObjectName}, &u); err != nil {
			return err.Error()
		}
		c := meta.FindStatusCondition(u.Status.Conditions, gpuadmitv1.ConditionWithinLimits)
		if c == nil || c.Status != status || !strings.Contains(c.Message, message) {
			return fmt.Sprintf("condition %+v", c)
		}
		return ""
	})
}

func awaitReport(t *testing.T, cl client.Client, summary reportsv1alpha1.ReportSummary, failMessage string) {
	t.Helper()
	poll(t, fmt.Sprintf("Report %s/%s with %+v", ns, openreports.Name, summary), func() string {
		var r reportsv1alpha1.Report
		if err := cl.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: openreports.Name}, &r); err != nil {
			return err.Error()
		}
		if r.Summary != summary || r.Source != "gpuadmit" || r.Scope == nil || r.Scope.Kind != "Namespace" || r.Scope.Name != ns {
			return fmt.Sprintf("report %+v", r)
		}
		for _, res := range r.Results {
			if res.Result == "fail" && (res.Rule != "nvidia.com/gpumem" || res.Description != failMessage) {
				return fmt.Sprintf("fail result %+v", res)
			}
		}
		return ""
	})
}

// overLimit is the scraped gpuadmit_namespace_over_limit series of ns.
func overLimit(t *testing.T, url, token string) []string {
	t.Helper()
	status, body, err := local.Scrape(t.Context(), url, token)
	if err != nil || status != 200 {
		t.Fatalf("scraping %s: %d %v", url, status, err)
	}
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "gpuadmit_namespace_over_limit{") && strings.Contains(line, `namespace="`+ns+`"`) {
			out = append(out, line)
		}
	}
	return out
}

func awaitMetric(t *testing.T, url, token string, over bool) {
	t.Helper()
	poll(t, fmt.Sprintf("gpuadmit_namespace_over_limit of %s present: %v", ns, over), func() string {
		series := overLimit(t, url, token)
		switch {
		case over && (len(series) != 1 || !strings.Contains(series[0], `resource="nvidia.com/gpumem"`)):
			return fmt.Sprintf("series %v", series)
		case !over && len(series) != 0:
			return fmt.Sprintf("series %v", series)
		}
		return ""
	})
}
