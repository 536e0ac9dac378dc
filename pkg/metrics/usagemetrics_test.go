package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

func usage(ns, family, resource, typ string) string {
	return "family=" + family + ",namespace=" + ns + ",resource=" + resource + ",type=" + typ
}

func objects(ns, kind string) string { return "kind=" + kind + ",namespace=" + ns }

func over(ns, quota, resource string) string {
	return "namespace=" + ns + ",resource=" + resource + ",resourcequota=" + quota
}

// running is a recorded GPU pod of ns using gpus devices of mem MiB and cores.
func running(name, ns string, gpus, mem, cores int64) *testpod.Builder {
	opts := []testpod.Opt{testpod.GPU(gpus), testpod.Mem(mem)}
	if cores > 0 {
		opts = append(opts, testpod.Cores(cores))
	}
	return testpod.New(name).NS(ns).App("main", opts...).AppRunning("main")
}

// claim is a recorded HAMi-DRA claim of ns.
func claim(ns, name string, count, mem int64) *resourcev1.ResourceClaim {
	c := testclaim.HAMiDRA(ns, name, count, mem, 0)
	c.UID, c.ResourceVersion = types.UID("uid-"+ns+"-"+name), "1"
	return c
}

func reserved(name string, v effective.Vector) reservation.Reservation {
	return reservation.Reservation{UID: types.UID("uid-" + name), Name: name, Demand: effective.UsageOf("nvidia", v)}
}

func TestNamespaceUsageMetric(t *testing.T) {
	gpushare := effective.Gpushare()
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "empty ledger: no series"},
		{name: "a namespace without a ResourceQuota has its usage (showback)",
			world: world{pods: []*testpod.Builder{running("p", "free", 1, 1024, 10), running("q", "free", 2, 2048, 0)}},
			want: map[string]float64{
				usage("free", "nvidia", gpuRes, "used"): 3, usage("free", "nvidia", memRes, "used"): 1024 + 2*2048,
				usage("free", "nvidia", coresRes, "used"):   10,
				usage("free", "nvidia", gpuRes, "reserved"): 0, usage("free", "nvidia", memRes, "reserved"): 0,
				usage("free", "nvidia", coresRes, "reserved"): 0,
			}},
		{name: "reservations only: reserved",
			world: world{reservations: map[string][]reservation.Reservation{"r": {reserved("next", effective.Vector{GPU: 1, MemMiB: 4096})}}},
			want: map[string]float64{
				usage("r", "nvidia", gpuRes, "used"): 0, usage("r", "nvidia", memRes, "used"): 0, usage("r", "nvidia", coresRes, "used"): 0,
				usage("r", "nvidia", gpuRes, "reserved"): 1, usage("r", "nvidia", memRes, "reserved"): 4096,
				usage("r", "nvidia", coresRes, "reserved"): 0,
			}},
		{name: "claims count in used",
			world: world{claims: []*resourcev1.ResourceClaim{claim("dra", "c1", 2, 4096)}},
			want: map[string]float64{
				usage("dra", "nvidia", gpuRes, "used"): 2, usage("dra", "nvidia", memRes, "used"): 8192, usage("dra", "nvidia", coresRes, "used"): 0,
				usage("dra", "nvidia", gpuRes, "reserved"): 0, usage("dra", "nvidia", memRes, "reserved"): 0,
				usage("dra", "nvidia", coresRes, "reserved"): 0,
			}},
		{name: "a quota without usage: no series",
			world: world{quotas: []*corev1.ResourceQuota{testquota.New("idle", "q", map[string]string{"limits.nvidia.com/gpu": "4"})}}},
		{name: "only the families a namespace uses; a family without cores has no cores series",
			world: world{families: []effective.Family{effective.Nvidia(), gpushare},
				pods: []*testpod.Builder{
					running("p", "both", 1, 1024, 0),
					testpod.New("s").NS("both").App("main", testpod.Res(gpushare.Names.Memory, "2")).AppRunning("main"),
					running("p", "nv", 1, 512, 0),
				}},
			want: map[string]float64{
				usage("both", "nvidia", gpuRes, "used"): 1, usage("both", "nvidia", memRes, "used"): 1024, usage("both", "nvidia", coresRes, "used"): 0,
				usage("both", "nvidia", gpuRes, "reserved"): 0, usage("both", "nvidia", memRes, "reserved"): 0,
				usage("both", "nvidia", coresRes, "reserved"):             0,
				usage("both", "gpushare", "aliyun.com/gpu-count", "used"): 1, usage("both", "gpushare", "aliyun.com/gpu-mem", "used"): 2048,
				usage("both", "gpushare", "aliyun.com/gpu-count", "reserved"): 0, usage("both", "gpushare", "aliyun.com/gpu-mem", "reserved"): 0,
				usage("nv", "nvidia", gpuRes, "used"): 1, usage("nv", "nvidia", memRes, "used"): 512, usage("nv", "nvidia", coresRes, "used"): 0,
				usage("nv", "nvidia", gpuRes, "reserved"): 0, usage("nv", "nvidia", memRes, "reserved"): 0,
				usage("nv", "nvidia", coresRes, "reserved"): 0,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compareSeries(t, gathered(t, collectorOf(tt.world), "gpuadmit_namespace_usage"), orEmpty(tt.want))
		})
	}
}

func TestChargedObjectsMetric(t *testing.T) {
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "empty ledger: no series"},
		{name: "pods, claims and reservations per charged namespace",
			world: world{
				quotas: []*corev1.ResourceQuota{testquota.New("idle", "q", map[string]string{"limits.nvidia.com/gpu": "4"})},
				pods:   []*testpod.Builder{running("p", "a", 1, 1024, 0), running("q", "a", 1, 1024, 0)},
				claims: []*resourcev1.ResourceClaim{claim("a", "c1", 1, 1024), claim("b", "c1", 1, 1024)},
				reservations: map[string][]reservation.Reservation{"a": {reserved("next", effective.Vector{GPU: 1})},
					"c": {reserved("first", effective.Vector{GPU: 1}), reserved("second", effective.Vector{MemMiB: 1})}},
			},
			want: map[string]float64{
				objects("a", "pod"): 2, objects("a", "claim"): 1, objects("a", "reservation"): 1,
				objects("b", "pod"): 0, objects("b", "claim"): 1, objects("b", "reservation"): 0,
				objects("c", "pod"): 0, objects("c", "claim"): 0, objects("c", "reservation"): 2,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compareSeries(t, gathered(t, collectorOf(tt.world), "gpuadmit_namespace_charged_objects"), orEmpty(tt.want))
		})
	}
}

func TestOverLimitMetric(t *testing.T) {
	lowered := func(ns string, hard map[string]string) []*corev1.ResourceQuota {
		return []*corev1.ResourceQuota{testquota.New(ns, "lowered", hard)}
	}
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "empty ledger: no series"},
		{name: "within the limits: no series",
			world: world{quotas: lowered("a", map[string]string{"limits.nvidia.com/gpu": "2", "limits.nvidia.com/gpumem": "8192"}),
				pods: []*testpod.Builder{running("p", "a", 2, 4096, 0)}}},
		{name: "a quota lowered under use: charged - limit per resource passed",
			world: world{quotas: lowered("a", map[string]string{"limits.nvidia.com/gpu": "1", "limits.nvidia.com/gpumem": "16384",
				"limits.nvidia.com/gpucores": "10"}),
				pods: []*testpod.Builder{running("p", "a", 2, 4096, 30)}},
			want: map[string]float64{over("a", "lowered", gpuRes): 1, over("a", "lowered", coresRes): 2*30 - 10}}, // cores per device
		{name: "reservations count in the charge",
			world: world{quotas: lowered("b", map[string]string{"limits.nvidia.com/gpumem": "4096"}),
				pods:         []*testpod.Builder{running("p", "b", 1, 3072, 0)},
				reservations: map[string][]reservation.Reservation{"b": {reserved("next", effective.Vector{GPU: 1, MemMiB: 2048})}}},
			want: map[string]float64{over("b", "lowered", memRes): 1024}},
		{name: "the tightest quota names the limit",
			world: world{quotas: []*corev1.ResourceQuota{
				testquota.New("c", "team", map[string]string{"limits.nvidia.com/gpu": "8"}),
				testquota.New("c", "project", map[string]string{"limits.nvidia.com/gpu": "0"}),
			}, pods: []*testpod.Builder{running("p", "c", 1, 1024, 0)}},
			want: map[string]float64{over("c", "project", gpuRes): 1}},
		{name: "an invalid value blocks but is a problem, not an overage",
			world: world{quotas: lowered("d", map[string]string{"limits.nvidia.com/gpu": "-1"}),
				pods: []*testpod.Builder{running("p", "d", 1, 1024, 0)}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compareSeries(t, gathered(t, collectorOf(tt.world), "gpuadmit_namespace_over_limit"), orEmpty(tt.want))
		})
	}
}

func TestResourceInfoMetric(t *testing.T) {
	for _, tt := range []struct {
		name     string
		families []effective.Family
		want     map[string]float64
	}{
		{name: "the defaults", want: map[string]float64{
			"dimension=count,family=nvidia,resource=" + gpuRes: 1, "dimension=memory,family=nvidia,resource=" + memRes: 1,
			"dimension=cores,family=nvidia,resource=" + coresRes: 1,
		}},
		{name: "a family without cores", families: []effective.Family{effective.Gpushare()}, want: map[string]float64{
			"dimension=count,family=gpushare,resource=aliyun.com/gpu-count": 1, "dimension=memory,family=gpushare,resource=aliyun.com/gpu-mem": 1,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compareSeries(t, gathered(t, collectorOf(world{families: tt.families}), "gpuadmit_resource_info"), tt.want)
		})
	}
}

// TestShowbackBounds checks the documented cardinality bounds (charged
// namespaces × families used × 3 resources × 2 types; charged namespaces
// × 3 kinds; over-limit namespaces × resources passed; families × 3
// resources) and the exposition's conventions (promlint).
func TestShowbackBounds(t *testing.T) {
	var w world
	w.reservations = map[string][]reservation.Reservation{}
	for _, ns := range []string{"a", "b", "c", "d"} {
		w.pods = append(w.pods, running("p", ns, 2, 2048, 0))
	}
	w.quotas = []*corev1.ResourceQuota{
		testquota.New("a", "q", map[string]string{"limits.nvidia.com/gpu": "1", "limits.nvidia.com/gpumem": "1024"}),
		testquota.New("idle", "q", map[string]string{"limits.nvidia.com/gpu": "1"}),
	}
	w.reservations["e"] = []reservation.Reservation{reserved("next", effective.Vector{GPU: 1})}
	c := collectorOf(w)
	for _, tc := range []struct {
		name string
		want int
	}{
		{"gpuadmit_namespace_usage", 5 * 3 * 2},       // a-e charged, idle is not
		{"gpuadmit_namespace_charged_objects", 5 * 3}, // the same namespaces
		{"gpuadmit_namespace_over_limit", 2},          // a: gpu and gpumem
		{"gpuadmit_resource_info", 3},                 // one family
		{"gpuadmit_resourcequota", 2*3 + 1*3},         // unchanged: a (2 limits), idle (1)
		{"gpuadmit_ledger_problems", 6*5 + 3},         // every namespace known, and the 3 cluster-wide
	} {
		if n := testutil.CollectAndCount(c, tc.name); n != tc.want {
			t.Errorf("%s has %d series, want %d", tc.name, n, tc.want)
		}
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func collectorOf(w world) *namespaceCollector {
	return newNamespaceCollector(w.ledger(), fixedReservations(w.reservations))
}

func orEmpty(m map[string]float64) map[string]float64 {
	if m == nil {
		return map[string]float64{}
	}
	return m
}
