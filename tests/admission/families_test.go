package admission_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// TestFamilies: the webhook configured with HAMi's own chart-rendered
// device configuration (every section, as HAMi's Helm chart renders it),
// Ascend switched on (HAMi's --enable-ascend), governs the Ascend and Hygon
// families: a pod over its namespace's
// limits.<family memory name> is denied with a message naming that
// resource, the admitted ones are charged to their family, and
// `kubectl get gpuusage` shows the families in use.
func TestFamilies(t *testing.T) {
	hami, err := filepath.Abs("../../pkg/config/testdata/hami-chart-rendered.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	doc := "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices:\n  hamiConfigPath: " + hami + "\n  ascend: {enabled: true}\n"
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(path)
	if err != nil {
		t.Fatalf("HAMi's chart-rendered device config does not load: %v", err)
	}
	c := local.ForTest(t, "../../manifests/webhook", func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.Config = cfg
		return &o
	})
	ctx := t.Context()
	// The manifests' matchConditions name the nvidia resources of the
	// default configuration (the chart renders them from the governed
	// families, tests/chart checks that): send every pod here instead.
	for _, kind := range []string{"mutatingwebhookconfiguration", "validatingwebhookconfiguration"} {
		if _, stderr, err := c.Kubectl(ctx, nil, "patch", kind, "gpuadmit", "--type=json",
			"-p", `[{"op":"remove","path":"/webhooks/0/matchConditions"}]`); err != nil {
			t.Fatalf("patching %s: %v: %s", kind, err, stderr)
		}
	}
	time.Sleep(time.Second) // the API server's webhook configuration cache

	for _, tc := range []struct {
		family, ns        string
		count, mem        corev1.ResourceName
		limit, first, big string
		charged           int64
		want              []string
	}{
		// HAMi pkg/device/ascend GenerateResourceRequests: 16384 is the vir06 template; 20000 rounds up to vir12 (32768).
		{"ascend-910B2", "npu", "huawei.com/Ascend910B2", "huawei.com/Ascend910B2-memory", "32768", "16384", "20000", 16384,
			[]string{"huawei.com/Ascend910B2-memory", "pod needs 32768 MiB", "16384 MiB used", "limit 32768 MiB"}},
		// HAMi pkg/device/hygon GenerateResourceRequests: dcumem as asked (memoryFactor 1).
		{"hygon", "dcu", "hygon.com/dcunum", "hygon.com/dcumem", "16384", "12000", "8000", 12000,
			[]string{"hygon.com/dcumem", "pod needs 8000 MiB", "12000 MiB used", "limit 16384 MiB"}},
	} {
		t.Run(tc.family, func(t *testing.T) {
			if err := c.CreateNamespace(ctx, tc.ns, nil); err != nil {
				t.Fatal(err)
			}
			q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "devices", Namespace: tc.ns},
				Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits." + tc.mem: resource.MustParse(tc.limit)}}}
			if _, err := c.Kube.CoreV1().ResourceQuotas(tc.ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			local.AwaitLedger(t, c, tc.ns, func(s ledger.NamespaceSnapshot) bool { return s.Limits[tc.family].MemMiB != nil })
			pod := func(name, mem string) *corev1.Pod {
				return limitsPod(tc.ns, name, map[string]string{string(tc.count): "1", string(tc.mem): mem})
			}
			if err := c.CreatePod(ctx, pod("first", tc.first)); err != nil {
				t.Fatalf("a pod within the %s limit: %v", tc.family, err)
			}
			local.AwaitLedger(t, c, tc.ns, func(s ledger.NamespaceSnapshot) bool {
				return s.Used.Of(tc.family).MemMiB == tc.charged && s.Reservations == 0
			})
			err := c.CreatePod(ctx, pod("big", tc.big))
			if err == nil {
				t.Fatalf("a pod over the %s limit was admitted", tc.family)
			}
			local.MustContain(t, tc.family, err.Error(), tc.want...)
			if s := c.Namespace(tc.ns); s.Used.Of(tc.family).MemMiB != tc.charged || len(s.Used) != 1 || s.Reservations != 0 {
				t.Errorf("namespace %s: used %s, %d reservations; want only %d MiB of %s", tc.ns, s.Used, s.Reservations, tc.charged, tc.family)
			}
			var out string
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(out, tc.family) && time.Now().Before(deadline) {
				out, _, _ = c.Kubectl(ctx, nil, "get", "gpuusage", "-n", tc.ns)
				time.Sleep(200 * time.Millisecond)
			}
			local.MustContain(t, "kubectl get gpuusage", out, "FAMILIES", tc.family)
		})
	}
}
