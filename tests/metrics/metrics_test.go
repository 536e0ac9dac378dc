package metrics_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// metricsNode is the GPU node of TestMetrics, with two devices.
const metricsNode = "metrics-node"

// TestMetrics runs the server with its metrics endpoint on a loopback port
// and checks what a Prometheus scraping it reads: gpuadmit_resourcequota
// equals the ledger's namespaces, gpuadmit_device the node's devices and
// their recorded usage, the validating webhook's decisions per namespace
// and reason, the showback and over-limit series (namespaces.go), the build
// and certificate gauges, the API server's webhook metrics the alerts read,
// and every metric charts/gpuadmit/files/monitoring's rules and dashboard
// use (charts/gpuadmit/files/monitoring/metrics.txt) has samples.
func TestMetrics(t *testing.T) {
	port := local.FreeLoopbackPort(t)
	reg := &undoRegisterer{Registerer: ctrlmetrics.Registry}
	t.Cleanup(reg.undo) // runs after ForTest's cleanup stopped the server
	c := local.ForTest(t, "../../manifests/webhook", func(c *local.Cluster) *server.Options {
		o := c.Options()
		o.MetricsAddr, o.Registry = fmt.Sprintf("127.0.0.1:%d", port), reg
		o.Version, o.Revision = testVersion, testRevision
		return &o
	})
	ctx := t.Context()
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	token, err := c.MetricsToken(ctx, true)
	if err != nil {
		t.Fatal(err)
	}

	node := testnode.WithDevices(metricsNode, nil,
		devices.Device{UUID: "GPU-m-0", Index: 0, Model: "NVIDIA L4", MemoryMiB: 23034, Cores: 100, Healthy: true},
		devices.Device{UUID: "GPU-m-1", Index: 1, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Cores: 100, Healthy: true})
	node.UID = ""
	if _, err := c.Kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quotas := map[string][]*corev1.ResourceQuota{
		"m-a": {testquota.New("m-a", "gpu", map[string]string{"limits.nvidia.com/gpu": "2", "limits.nvidia.com/gpumem": "24576"})},
		"m-b": {testquota.New("m-b", "gpu", map[string]string{"limits.nvidia.com/gpumem": "16384", "limits.nvidia.com/gpucores": "100"})},
		"m-c": {testquota.New("m-c", "team", map[string]string{"limits.nvidia.com/gpu": "4"}),
			testquota.New("m-c", "project", map[string]string{"limits.nvidia.com/gpu": "1"})},
	}
	for _, ns := range slices.Sorted(maps.Keys(quotas)) {
		if err := c.CreateNamespace(ctx, ns, nil); err != nil {
			t.Fatal(err)
		}
		for _, q := range quotas[ns] {
			q.UID = ""
			if _, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		local.AwaitLedger(t, c, ns, func(s ledger.NamespaceSnapshot) bool { return len(s.Quotas) == len(quotas[ns]) })
	}
	// The pods go through both webhooks (gpuadmit_admission_decisions_total
	// and gpuadmit_admission_duration_seconds get their samples: allowed
	// here, denied below); two are bound and assigned to the node's devices
	// as HAMi's scheduler would, so that gpuadmit_device has usage.
	pods := []*testpod.Builder{
		testpod.New("a1").NS("m-a").App("main", testpod.GPU(1), testpod.Mem(8192), testpod.Cores(30)).
			Node(metricsNode).Devices("GPU-m-0,NVIDIA,8192,30:;"),
		testpod.New("b1").NS("m-b").App("main", testpod.GPU(1), testpod.Mem(4096), testpod.Cores(20)).
			Node(metricsNode).Devices("GPU-m-1,NVIDIA,4096,20:;"),
		testpod.New("c1").NS("m-c").App("main", testpod.GPU(1), testpod.Mem(2048)),
	}
	for _, b := range pods {
		p := b.Build()
		p.UID, p.Status = "", corev1.PodStatus{}
		if err := c.CreatePod(ctx, p); err != nil {
			t.Fatalf("creating pod %s/%s: %v", p.Namespace, p.Name, err)
		}
	}
	if err := c.CreatePod(ctx, creates.GPUPod("m-b", "too-big", "", 20000)); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Fatalf("a 20000 MiB pod in a 16384 MiB namespace: err = %v, want a denial", err)
	}
	for ns, ok := range map[string]func(ledger.NamespaceSnapshot) bool{
		"m-a": func(s ledger.NamespaceSnapshot) bool {
			return s.Pods == 1 && s.Reservations == 0 && s.Used.Of("nvidia").MemMiB == 8192
		},
		"m-b": func(s ledger.NamespaceSnapshot) bool {
			return s.Pods == 1 && s.Reservations == 0 && s.Used.Of("nvidia").MemMiB == 4096
		},
		"m-c": func(s ledger.NamespaceSnapshot) bool {
			return s.Pods == 1 && s.Reservations == 0 && s.Used.Of("nvidia").GPU == 1
		},
	} {
		local.AwaitLedger(t, c, ns, ok)
	}
	setUpShowback(t, c)
	budgetStart := time.Now()
	setUpBudgets(t, c)

	t.Run("gpuadmit_resourcequota is the ledger's namespaces", func(t *testing.T) {
		eventually(t, url, token, "gpuadmit_resourcequota", func() map[string]float64 {
			want := map[string]float64{}
			names := c.Server.Ledger.Families()[0].Names
			for _, ns := range append(slices.Sorted(maps.Keys(quotas)), loweredNS) {
				s := c.Namespace(ns)
				for _, r := range []struct {
					name           corev1.ResourceName
					limit          *ledger.Limit
					used, reserved int64
				}{
					{names.Count, s.Limits["nvidia"].GPU, s.Used.Of("nvidia").GPU, s.Reserved.Of("nvidia").GPU},
					{names.Memory, s.Limits["nvidia"].MemMiB, s.Used.Of("nvidia").MemMiB, s.Reserved.Of("nvidia").MemMiB},
					{names.Cores, s.Limits["nvidia"].Cores, s.Used.Of("nvidia").Cores, s.Reserved.Of("nvidia").Cores},
				} {
					if r.limit == nil {
						continue
					}
					key := fmt.Sprintf("namespace=%s,resource=%s,resourcequota=%s,type=", ns, r.name, r.limit.Quota)
					want[key+"hard"], want[key+"used"], want[key+"reserved"] = float64(r.limit.Value), float64(r.used), float64(r.reserved)
				}
			}
			if len(want) != (2+2+1+1)*3 { // m-a: 2 limits, m-b: 2, m-c: 1 (the tightest quota's), m-e: 1
				t.Fatalf("the ledger's limits: %v", want)
			}
			return want
		}, map[string]float64{ // what the quotas say and the pods use
			"namespace=m-a,resource=nvidia.com/gpumem,resourcequota=gpu,type=hard":      24576,
			"namespace=m-a,resource=nvidia.com/gpumem,resourcequota=gpu,type=used":      8192,
			"namespace=m-b,resource=nvidia.com/gpucores,resourcequota=gpu,type=used":    20,
			"namespace=m-c,resource=nvidia.com/gpu,resourcequota=project,type=hard":     1,
			"namespace=m-c,resource=nvidia.com/gpu,resourcequota=project,type=used":     1,
			"namespace=m-c,resource=nvidia.com/gpu,resourcequota=project,type=reserved": 0,
		})
	})

	t.Run("gpuadmit_device is the node's devices and their usage", func(t *testing.T) {
		eventually(t, url, token, "gpuadmit_device", func() map[string]float64 {
			want := map[string]float64{}
			names := c.Server.Ledger.Families()[0].Names
			for uuid, d := range c.Server.Ledger.Snapshot(nil).Nodes[metricsNode].Devices {
				if d.Capacity == nil {
					t.Fatalf("device %s: no capacity in the ledger", uuid)
				}
				key := func(res corev1.ResourceName, typ string) string {
					return fmt.Sprintf("model=%s,node=%s,resource=%s,type=%s,uuid=%s", d.Capacity.Model, metricsNode, res, typ, uuid)
				}
				want[key(names.Memory, "capacity")], want[key(names.Cores, "capacity")] = float64(d.Capacity.MemMiB), float64(d.Capacity.Cores)
				want[key(names.Memory, "used")], want[key(names.Cores, "used")] = float64(d.Used.MemMiB), float64(d.Used.Cores)
			}
			return want
		}, map[string]float64{ // what the node announces and the pods are assigned
			"model=NVIDIA L4,node=metrics-node,resource=nvidia.com/gpumem,type=capacity,uuid=GPU-m-0":             23034,
			"model=NVIDIA L4,node=metrics-node,resource=nvidia.com/gpumem,type=used,uuid=GPU-m-0":                 8192,
			"model=NVIDIA L4,node=metrics-node,resource=nvidia.com/gpucores,type=used,uuid=GPU-m-0":               30,
			"model=NVIDIA A100-SXM4-40GB,node=metrics-node,resource=nvidia.com/gpumem,type=capacity,uuid=GPU-m-1": 40960,
			"model=NVIDIA A100-SXM4-40GB,node=metrics-node,resource=nvidia.com/gpumem,type=used,uuid=GPU-m-1":     4096,
			"model=NVIDIA A100-SXM4-40GB,node=metrics-node,resource=nvidia.com/gpucores,type=used,uuid=GPU-m-1":   20,
		})
	})

	t.Run("decisions per namespace and reason", func(t *testing.T) { checkDecisions(t, url, token) })
	t.Run("usage of every namespace with GPU pods", func(t *testing.T) { checkShowback(t, c, url, token) })
	t.Run("a namespace over a lowered limit", func(t *testing.T) { checkOverLimit(t, c, url, token) })
	t.Run("build and certificate", func(t *testing.T) { checkInfo(t, c, url, token) })
	t.Run("the budget of namespace m-a", func(t *testing.T) { checkBudgets(t, url, token, budgetStart) })
	t.Run("the API server's webhook metrics", func(t *testing.T) { checkAPIServerMetrics(t, c) })

	t.Run("every metric of charts/gpuadmit/files/monitoring has samples", func(t *testing.T) { checkListed(t, c, url, token) })
}
