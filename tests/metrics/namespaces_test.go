package metrics_test

import (
	"crypto/tls"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// The namespaces of the showback and audit checks, and the build TestMetrics
// names.
const (
	showbackNS   = "m-d" // GPU pods, no ResourceQuota
	loweredNS    = "m-e" // a ResourceQuota lowered under what it admitted
	testVersion  = "v0.0.0-metrics"
	testRevision = "0123abc"
)

// chargedNamespaces are every namespace of TestMetrics with GPU pods.
var chargedNamespaces = []string{"m-a", "m-b", "m-c", showbackNS, loweredNS}

// setUpShowback creates showbackNS with an admitted GPU pod and one no
// device can hold (denied by a policy rule, no limit passed), and
// loweredNS with an admitted pod whose quota is then lowered from 8192 to
// 2048 MiB under its 4096.
func setUpShowback(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	for _, ns := range []string{showbackNS, loweredNS} {
		if err := c.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
	}
	q := testquota.New(loweredNS, "gpu", map[string]string{"limits.nvidia.com/gpumem": "8192"})
	q.UID = ""
	if _, err := c.Kube.CoreV1().ResourceQuotas(loweredNS).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, loweredNS, func(s ledger.NamespaceSnapshot) bool { return len(s.Quotas) == 1 })
	for _, b := range []*testpod.Builder{
		testpod.New("d1").NS(showbackNS).App("main", testpod.GPU(1), testpod.Mem(1024)),
		testpod.New("e1").NS(loweredNS).App("main", testpod.GPU(1), testpod.Mem(4096)),
	} {
		p := b.Build()
		p.UID, p.Status = "", corev1.PodStatus{}
		if err := c.CreatePod(ctx, p); err != nil {
			t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	if err := c.CreatePod(ctx, creates.GPUPod(showbackNS, "huge", "", 50000)); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("a 50000 MiB pod, larger than any device: err = %v, want a denial", err)
	}
	for _, ns := range []string{showbackNS, loweredNS} {
		local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return s.Pods == 1 && s.Reservations == 0 })
	}
	cur, err := c.Kube.CoreV1().ResourceQuotas(loweredNS).Get(ctx, "gpu", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Hard["limits.nvidia.com/gpumem"] = resource.MustParse("2048")
	if _, err := c.Kube.CoreV1().ResourceQuotas(loweredNS).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	local.AwaitLedger(t, c, loweredNS, func(s ledger.NamespaceSnapshot) bool {
		l := s.Limits["nvidia"].MemMiB
		return l != nil && l.Value == 2048
	})
}

// checkDecisions: the validating webhook's answers, exactly, per
// namespace and reason: one admitted pod per namespace, the quota denial
// in m-b, the policy denial in showbackNS.
func checkDecisions(t *testing.T, url, token string) {
	want := map[string]float64{}
	for _, ns := range chargedNamespaces {
		want["namespace="+ns+",reason=gpu,verdict=allowed,webhook=validate"] = 1
	}
	want["namespace=m-b,reason=quota,verdict=denied,webhook=validate"] = 1
	want["namespace="+showbackNS+",reason=policy,verdict=denied,webhook=validate"] = 1
	got := map[string]float64{}
	for k, v := range scrape(t, url, token)["gpuadmit_admission_decisions_total"].series {
		if strings.HasSuffix(k, ",webhook=validate") {
			got[k] = v
		}
	}
	for _, d := range seriesDiff(got, want) {
		t.Error(d)
	}
}

// checkShowback: gpuadmit_namespace_usage and _charged_objects equal the
// ledger for every namespace with GPU pods, showbackNS (no quota) included.
func checkShowback(t *testing.T, c *local.Cluster, url, token string) {
	names := c.Server.Ledger.Families()[0].Names
	eventually(t, url, token, "gpuadmit_namespace_usage", func() map[string]float64 {
		want := map[string]float64{}
		for _, ns := range chargedNamespaces {
			s := c.Namespace(ns)
			used, reserved := s.Used.Of("nvidia"), s.Reserved.Of("nvidia")
			for _, r := range []struct {
				name           corev1.ResourceName
				used, reserved int64
			}{{names.Count, used.GPU, reserved.GPU}, {names.Memory, used.MemMiB, reserved.MemMiB}, {names.Cores, used.Cores, reserved.Cores}} {
				key := fmt.Sprintf("family=nvidia,namespace=%s,resource=%s,type=", ns, r.name)
				want[key+"used"], want[key+"reserved"] = float64(r.used), float64(r.reserved)
			}
		}
		return want
	}, map[string]float64{
		"family=nvidia,namespace=m-d,resource=nvidia.com/gpu,type=used":        1,
		"family=nvidia,namespace=m-d,resource=nvidia.com/gpumem,type=used":     1024,
		"family=nvidia,namespace=m-d,resource=nvidia.com/gpumem,type=reserved": 0,
	})
	eventually(t, url, token, "gpuadmit_namespace_charged_objects", func() map[string]float64 {
		want := map[string]float64{}
		for _, ns := range chargedNamespaces {
			s := c.Namespace(ns)
			want["kind=pod,namespace="+ns], want["kind=claim,namespace="+ns] = float64(s.Pods), float64(s.Claims)
			want["kind=reservation,namespace="+ns] = float64(s.Reservations)
		}
		return want
	}, map[string]float64{"kind=pod,namespace=m-d": 1, "kind=claim,namespace=m-d": 0, "kind=reservation,namespace=m-d": 0})
}

// checkOverLimit: only loweredNS is over a limit, by 4096 - 2048 MiB.
func checkOverLimit(t *testing.T, c *local.Cluster, url, token string) {
	eventually(t, url, token, "gpuadmit_namespace_over_limit", func() map[string]float64 {
		want := map[string]float64{}
		for _, ns := range chargedNamespaces {
			for _, o := range ledger.OverLimits(c.Namespace(ns), c.Server.Ledger.Families()) {
				want[fmt.Sprintf("namespace=%s,resource=%s,resourcequota=%s", ns, o.Resource, o.Quota)] = float64(o.Charged() - o.Limit)
			}
		}
		return want
	}, map[string]float64{"namespace=m-e,resource=nvidia.com/gpumem,resourcequota=gpu": 2048})
}

// checkInfo: gpuadmit_build_info names the build the server was given, and
// the serving certificate's expiry is that of the certificate the webhook
// port presents.
func checkInfo(t *testing.T, c *local.Cluster, url, token string) {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reading the test server's certificate
	if err != nil {
		t.Fatal(err)
	}
	served := conn.ConnectionState().PeerCertificates[0].NotAfter
	_ = conn.Close()
	families := scrape(t, url, token)
	for name, want := range map[string]map[string]float64{
		"gpuadmit_build_info":                           {fmt.Sprintf("goversion=%s,revision=%s,version=%s", runtime.Version(), testRevision, testVersion): 1},
		"gpuadmit_certificate_expiry_timestamp_seconds": {"certificate=serving": float64(served.Unix())},
	} {
		for _, d := range seriesDiff(families[name].series, want) {
			t.Errorf("%s: %s", name, d)
		}
	}
}

// rulesFile holds the alert whose name matcher checkAPIServerMetrics tries.
const rulesFile = "../../charts/gpuadmit/files/monitoring/prometheus-rules.yaml"

// checkAPIServerMetrics: the API server's metrics GPUAdmitWebhookUnreachable
// reads exist with the labels it selects. A configuration of two webhooks
// that cannot be reached (named like gpuadmit's, one failurePolicy Fail,
// one Ignore) refuses a pod of their namespace and lets it through
// unchecked; with the quota denial of TestMetrics the API server counts
// rejections of validate.gpuadmit.io (the chart's name), calling errors of
// the first and fail-open calls of the second, and the rules' name matcher
// selects all three.
func checkAPIServerMetrics(t *testing.T, c *local.Cluster) {
	ctx := t.Context()
	const ns = "m-unreachable"
	if err := c.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	cfg := unreachableWebhooks(ns, fmt.Sprintf("https://127.0.0.1:%d/unreachable", local.FreeLoopbackPort(t)))
	adm := c.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := adm.Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = adm.Delete(ctx, cfg.Name, metav1.DeleteOptions{}) })
	pod := testpod.New("web").NS(ns).App("c", testpod.CPU("100m")).Build()
	pod.UID, pod.Status = "", corev1.PodStatus{}
	if err := c.CreatePod(ctx, pod); err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("a pod under an unreachable webhook with failurePolicy Fail: err = %v, want a refusal", err)
	}
	body, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	families := parseExposition(t, "the API server's /metrics", string(body))
	matcher := webhookNameMatcher(t)
	for _, s := range []struct{ metric, name, errorType string }{
		{"apiserver_admission_webhook_rejection_count", "validate.gpuadmit.io", "no_error"},
		{"apiserver_admission_webhook_rejection_count", "unreachable-fail.gpuadmit.io", "calling_webhook_error"},
		{"apiserver_admission_webhook_fail_open_count", "unreachable-ignore.gpuadmit.io", ""},
	} {
		if !hasSeries(families[s.metric], "name="+s.name, "error_type="+s.errorType) {
			t.Errorf("the API server has no %s{name=%q, error_type=%q}: %v", s.metric, s.name, s.errorType, families[s.metric].series)
		}
		if !matcher.MatchString(s.name) {
			t.Errorf("%s: the name matcher %s does not select webhook %s", rulesFile, matcher, s.name)
		}
	}
}

func unreachableWebhooks(ns, url string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	hook := func(name string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			FailurePolicy: &policy, SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:    ptr.To[int32](2),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "gpuadmit-unreachable-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("unreachable-fail.gpuadmit.io", admissionregistrationv1.Fail),
			hook("unreachable-ignore.gpuadmit.io", admissionregistrationv1.Ignore)}}
}

// webhookNameMatcher is the name=~ matcher of GPUAdmitWebhookUnreachable,
// anchored as PromQL anchors it.
func webhookNameMatcher(t *testing.T) *regexp.Regexp {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`apiserver_admission_webhook_rejection_count\{name=~"([^"]+)"`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no name matcher on apiserver_admission_webhook_rejection_count", rulesFile)
	}
	return regexp.MustCompile("^(?:" + string(m[1]) + ")$")
}

// hasSeries reports whether f has a series with every label ("name=value";
// "name=" for one it lacks).
func hasSeries(f family, labels ...string) bool {
	for key := range f.series {
		parts := strings.Split(key, ",")
		if !slices.ContainsFunc(labels, func(l string) bool {
			if strings.HasSuffix(l, "=") {
				return slices.ContainsFunc(parts, func(p string) bool { return strings.HasPrefix(p, l) })
			}
			return !slices.Contains(parts, l)
		}) {
			return true
		}
	}
	return false
}

// externalMetrics are the names of metrics.txt that neither gpuadmit nor
// the API server of the suite exports, with who does.
var externalMetrics = map[string]string{"up": "Prometheus, for each scrape target"}

// checkListed: every metric of metrics.txt has samples: gpuadmit's on the
// server's /metrics, apiserver_* on the API server's (after
// checkAPIServerMetrics), and any other is one of externalMetrics.
//
// A vector family without children prints nothing, not even # HELP, so
// each name must have samples. They come from the events of TestMetrics:
// the quotas (gpuadmit_resourcequota; gpuadmit_ledger_problems has a
// series per known namespace), the pods (gpuadmit_namespace_*), the lowered
// quota (gpuadmit_namespace_over_limit), the budget of m-a and its running
// pod (gpuadmit_budget_*), the node's devices
// (gpuadmit_device), the admitted and the denied pods (gpuadmit_admission_*);
// the policy, watch, build, certificate and resource gauges have a sample
// from the start.
func checkListed(t *testing.T, c *local.Cluster, url, token string) {
	b, err := os.ReadFile("../../charts/gpuadmit/files/monitoring/metrics.txt")
	if err != nil {
		t.Fatal(err)
	}
	names := strings.Fields(string(b))
	if len(names) == 0 {
		t.Fatal("charts/gpuadmit/files/monitoring/metrics.txt lists no metric")
	}
	body, err := c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(t.Context())
	if err != nil {
		t.Fatalf("reading the API server's metrics: %v", err)
	}
	sources := map[string]map[string]family{"gpuadmit_": scrape(t, url, token),
		"apiserver_": parseExposition(t, "the API server's /metrics", string(body))}
	for _, n := range names {
		prefix, _, _ := strings.Cut(n, "_")
		families, known := sources[prefix+"_"]
		if !known {
			if _, external := externalMetrics[n]; !external {
				t.Errorf("%s (metrics.txt) is neither gpuadmit's nor the API server's: add who exports it to externalMetrics", n)
			}
			continue
		}
		f, ok := families[n]
		if !ok { // a histogram's _bucket, _sum or _count: its family
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, cut := strings.CutSuffix(n, suffix); cut && families[base].typ == "HISTOGRAM" {
					f, ok = families[base], true
				}
			}
		}
		if !ok || len(f.series) == 0 {
			t.Errorf("%s (charts/gpuadmit/files/monitoring/metrics.txt) has no samples", n)
		}
	}
}
