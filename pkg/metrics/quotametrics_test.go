package metrics

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// world is what a ledger is fed: nodes, quotas, pods, claims, then reservations.
type world struct {
	settings     *effective.Family  // nil: the defaults
	families     []effective.Family // several families (settings is ignored)
	nodes        []*corev1.Node
	quotas       []*corev1.ResourceQuota
	pods         []*testpod.Builder
	claims       []*resourcev1.ResourceClaim // of HAMi-DRA's class, counted against the first family
	slices       []*resourcev1.ResourceSlice
	classes      []*resourcev1.DeviceClass
	reservations map[string][]reservation.Reservation
	after        []*corev1.Node // node changes once the pods are recorded
}

func (w world) ledger() *ledger.Ledger {
	s := effective.Nvidia()
	if w.settings != nil {
		s = *w.settings
	}
	fams := []effective.Family{s}
	if w.families != nil {
		fams = w.families
	}
	opts := ledger.Options{Families: fams}
	if len(w.claims)+len(w.slices)+len(w.classes) > 0 {
		var err error
		if opts.Claims, err = dra.NewCharger([]dra.Class{{Name: testclaim.HAMiDRAClass, Family: fams[0].Name, Mode: dra.ModeCapacity,
			Driver: testclaim.HAMiDRAClass, MemoryCapacity: "memory", CoresCapacity: "cores"}}, fams); err != nil {
			panic(err)
		}
	}
	l := ledger.New(opts)
	for _, n := range w.nodes {
		l.UpsertNode(n)
	}
	for _, q := range w.quotas {
		l.UpsertQuota(q)
	}
	for _, p := range w.pods {
		l.UpsertPod(p.Build())
	}
	for _, s := range w.slices {
		l.UpsertSlice(s)
	}
	for _, dc := range w.classes {
		l.UpsertDeviceClass(dc)
	}
	for _, c := range w.claims {
		l.UpsertClaim(c)
	}
	for _, n := range w.after {
		l.UpsertNode(n)
	}
	return l
}

// gathered registers c on a fresh pedantic registry (which checks that
// Collect matches Describe) and returns the samples of family name, each
// keyed by its labels ("name=value,..." in label-name order).
func gathered(t *testing.T, c prometheus.Collector, name string) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatalf("registering the collector: %v", err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			parts := make([]string, 0, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				parts = append(parts, lp.GetName()+"="+lp.GetValue())
			}
			out[strings.Join(parts, ",")] = m.GetGauge().GetValue()
		}
	}
	return out
}

// compareSeries fails with the missing, unexpected and differing series.
func compareSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("missing series {%s} (want %v)", k, want[k])
		} else if g != want[k] {
			t.Errorf("{%s} = %v, want %v", k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series {%s} = %v", k, got[k])
		}
	}
}

func rq(ns, quota, resource, typ string) string {
	return "namespace=" + ns + ",resource=" + resource + ",resourcequota=" + quota + ",type=" + typ
}

func problem(ns, kind string) string { return "kind=" + kind + ",namespace=" + ns }

const (
	gpuRes   = "nvidia.com/gpu"
	memRes   = "nvidia.com/gpumem"
	coresRes = "nvidia.com/gpucores"
)

func TestResourceQuotaMetric(t *testing.T) {
	kib := effective.Nvidia()
	kib.MemoryFactor = 1024 // the memory resource counts GiB
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "empty ledger: no series"},
		{name: "hard, used and reserved of each limited resource only",
			world: world{
				quotas: []*corev1.ResourceQuota{testquota.New("a", "gpu-quota", map[string]string{
					"limits.nvidia.com/gpu": "2", "limits.nvidia.com/gpumem": "24576", "requests.cpu": "8"})},
				pods: []*testpod.Builder{testpod.New("train").NS("a").App("main", testpod.GPU(1), testpod.Mem(10240), testpod.Cores(30)).
					AppRunning("main")},
				reservations: map[string][]reservation.Reservation{"a": {{UID: "uid-a-next", Name: "next",
					Demand: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 4096, Cores: 10})}}},
			},
			want: map[string]float64{
				rq("a", "gpu-quota", gpuRes, "hard"): 2, rq("a", "gpu-quota", gpuRes, "used"): 1, rq("a", "gpu-quota", gpuRes, "reserved"): 1,
				rq("a", "gpu-quota", memRes, "hard"): 24576, rq("a", "gpu-quota", memRes, "used"): 10240, rq("a", "gpu-quota", memRes, "reserved"): 4096,
			}},
		{name: "the tightest of several quotas names its quota, per resource",
			world: world{quotas: []*corev1.ResourceQuota{
				testquota.New("b", "team", map[string]string{"limits.nvidia.com/gpu": "8", "limits.nvidia.com/gpucores": "200"}),
				testquota.New("b", "project", map[string]string{"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpucores": "400"}),
			}},
			want: map[string]float64{
				rq("b", "project", gpuRes, "hard"): 4, rq("b", "project", gpuRes, "used"): 0, rq("b", "project", gpuRes, "reserved"): 0,
				rq("b", "team", coresRes, "hard"): 200, rq("b", "team", coresRes, "used"): 0, rq("b", "team", coresRes, "reserved"): 0,
			}},
		{name: "an invalid value blocks: hard 0",
			world: world{quotas: []*corev1.ResourceQuota{testquota.New("c", "broken", map[string]string{"limits.nvidia.com/gpumem": "-1"})}},
			want: map[string]float64{
				rq("c", "broken", memRes, "hard"): 0, rq("c", "broken", memRes, "used"): 0, rq("c", "broken", memRes, "reserved"): 0,
			}},
		{name: "memory in MiB whatever the memory resource's unit",
			world: world{settings: &kib,
				quotas: []*corev1.ResourceQuota{testquota.New("d", "gib", map[string]string{"limits.nvidia.com/gpumem": "24"})},
				pods:   []*testpod.Builder{testpod.New("p").NS("d").App("main", testpod.GPU(1), testpod.Mem(10)).AppRunning("main")},
			},
			want: map[string]float64{
				rq("d", "gib", memRes, "hard"): 24576, rq("d", "gib", memRes, "used"): 10240, rq("d", "gib", memRes, "reserved"): 0,
			}},
		{name: "usage without a limit: no series",
			world: world{pods: []*testpod.Builder{testpod.New("p").NS("free").App("main", testpod.GPU(1), testpod.Mem(1024)).AppRunning("main")}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newNamespaceCollector(tt.world.ledger(), fixedReservations(tt.world.reservations))
			if tt.want == nil {
				tt.want = map[string]float64{}
			}
			compareSeries(t, gathered(t, c, "gpuadmit_resourcequota"), tt.want)
		})
	}
}

func TestLedgerProblemsMetric(t *testing.T) {
	malformed := testnode.Annotated("bad", nil, map[string]string{devices.NodeDevicesAnnotation: "not json"})
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "empty ledger: the cluster-wide series only",
			want: cluster(0, 0, 0)},
		{name: "a known namespace without problems has zero series",
			world: world{quotas: []*corev1.ResourceQuota{testquota.New("a", "q", map[string]string{"limits.nvidia.com/gpu": "1"})}},
			want: with(cluster(0, 0, 0), map[string]float64{problem("a", "unresolved-pod"): 0, problem("a", "invalid-pod"): 0,
				problem("a", "invalid-quota"): 0, problem("a", "ungoverned-quota"): 0, problem("a", "held-charge"): 0})},
		{name: "unresolved percentages, invalid pods, invalid quotas (once per object) and malformed nodes",
			world: world{
				nodes: []*corev1.Node{malformed},
				quotas: []*corev1.ResourceQuota{
					testquota.New("a", "both-bad", map[string]string{"limits.nvidia.com/gpu": "0.5", "limits.nvidia.com/gpumem": "-1"}), // rounded down, blocked
					testquota.New("a", "fine", map[string]string{"limits.nvidia.com/gpucores": "100"}),
				},
				pods: []*testpod.Builder{
					testpod.New("half").NS("a").App("main", testpod.GPU(1), testpod.MemPct(50)),
					testpod.New("quarter").NS("a").App("main", testpod.GPU(1), testpod.MemPct(25)),
					testpod.New("fraction").NS("b").App("main", testpod.GPU(1), testpod.Res(testpod.MemName, "1.5")),
				},
			},
			want: map[string]float64{
				problem("a", "unresolved-pod"): 2, problem("a", "invalid-pod"): 0, problem("a", "invalid-quota"): 1, problem("a", "ungoverned-quota"): 0, problem("a", "held-charge"): 0,
				problem("b", "unresolved-pod"): 0, problem("b", "invalid-pod"): 1, problem("b", "invalid-quota"): 0, problem("b", "ungoverned-quota"): 0, problem("b", "held-charge"): 0,
				problem("", "invalid-node"): 1, problem("", "invalid-resourceslice"): 0, problem("", "invalid-deviceclass"): 0,
			}},
		{name: "a quota of a family not governed: one ungoverned quota, read as written",
			world: world{quotas: []*corev1.ResourceQuota{testquota.New("d", "dcu", map[string]string{"limits.hygon.com/dcumem": "8000", "limits.hygon.com/dcunum": "2"})}},
			want: with(cluster(0, 0, 0), map[string]float64{problem("d", "unresolved-pod"): 0, problem("d", "invalid-pod"): 0,
				problem("d", "invalid-quota"): 0, problem("d", "ungoverned-quota"): 1, problem("d", "held-charge"): 0})},
		{name: "a pod whose node's capacity dropped under its charge",
			world: world{
				nodes: []*corev1.Node{testnode.WithGPUs("n1", nil, 81920)},
				pods:  []*testpod.Builder{testpod.New("whole").NS("c").App("main", testpod.GPU(1)).Node("n1").AppRunning("main")},
				after: []*corev1.Node{testnode.WithGPUs("n1", nil, 16384)},
			},
			want: map[string]float64{
				problem("c", "unresolved-pod"): 0, problem("c", "invalid-pod"): 0, problem("c", "invalid-quota"): 0, problem("c", "ungoverned-quota"): 0, problem("c", "held-charge"): 1,
				problem("", "invalid-node"): 0, problem("", "invalid-resourceslice"): 0, problem("", "invalid-deviceclass"): 0,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compareSeries(t, gathered(t, newNamespaceCollector(tt.world.ledger(), fixedReservations(tt.world.reservations)), "gpuadmit_ledger_problems"), tt.want)
		})
	}
}

// TestDRAProblemsMetric: the DRA inputs the ledger refuses are counted
// cluster-wide (namespace ""), once per object: a node publishing another
// node's pool (both slices are reported: the forger's is not used, the
// owner's pool has another writer), a node's copy of a network pool, a slice of implausible
// devices (two of them: one slice), a DeviceClass outside the governed list
// that selects the governed driver's devices. Sound slices and a class of
// another driver count 0.
func TestDRAProblemsMetric(t *testing.T) {
	owner := draSlice("b", "node-b", "node-b", "141Gi")
	network := draSlice("net", "", "shared", "80Gi")
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "sound slices, a class of another driver",
			world: world{slices: []*resourcev1.ResourceSlice{owner, network}, classes: []*resourcev1.DeviceClass{deviceClass("fpga", "example.com")}},
			want:  cluster(0, 0, 0)},
		{name: "a node publishing another node's pool",
			world: world{slices: []*resourcev1.ResourceSlice{owner, draSlice("a-forged", "node-a", "node-b", "1Mi")}},
			want:  cluster(0, 2, 0)},
		{name: "a node's copy of a network pool",
			world: world{slices: []*resourcev1.ResourceSlice{network, draSlice("shadow", "node-a", "shared", "1Mi")}},
			want:  cluster(0, 1, 0)},
		{name: "a slice of two implausible devices counts once",
			world: world{slices: []*resourcev1.ResourceSlice{owner, draSlice("c", "node-c", "node-c", "1125899906842624Mi", "0")}},
			want:  cluster(0, 1, 0)},
		{name: "a class outside the governed list selecting the governed driver",
			world: world{slices: []*resourcev1.ResourceSlice{owner},
				classes: []*resourcev1.DeviceClass{deviceClass("copy", testclaim.HAMiDRAClass), deviceClass("fpga", "example.com")}},
			want: cluster(0, 0, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			compareSeries(t, gathered(t, newNamespaceCollector(tt.world.ledger(), fixedReservations(nil)), "gpuadmit_ledger_problems"), tt.want)
		})
	}
}

// cluster is the cluster-wide series of gpuadmit_ledger_problems.
func cluster(nodes, rslices, classes float64) map[string]float64 {
	return map[string]float64{problem("", "invalid-node"): nodes, problem("", "invalid-resourceslice"): rslices,
		problem("", "invalid-deviceclass"): classes}
}

func with(a, b map[string]float64) map[string]float64 {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// draSlice is a slice of HAMi-DRA's driver publishing in pool one device
// per memory (node "": a network pool, for all nodes).
func draSlice(name, node, pool string, memory ...string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourcev1.ResourceSliceSpec{Driver: testclaim.HAMiDRAClass, Pool: resourcev1.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: 1}}}
	if node == "" {
		all := true
		s.Spec.AllNodes = &all
	} else {
		s.Spec.NodeName = &node
	}
	for i, m := range memory {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse(m)}}})
	}
	return s
}

// deviceClass selects the devices of driver.
func deviceClass(name, driver string) *resourcev1.DeviceClass {
	return &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourcev1.DeviceClassSpec{
		Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "` + driver + `"`}}}}}
}

// TestNamespaceCollectorBounds checks the documented cardinality bound
// (namespaces with limits × 3 resources × 3 types, plus namespaces × 5
// problem kinds + 3) and the exposition's conventions (promlint).
func TestNamespaceCollectorBounds(t *testing.T) {
	var w world
	for _, ns := range []string{"a", "b", "c"} {
		w.quotas = append(w.quotas, testquota.New(ns, "q", map[string]string{
			"limits.nvidia.com/gpu": "4", "limits.nvidia.com/gpumem": "4096", "limits.nvidia.com/gpucores": "100"}))
		w.pods = append(w.pods, testpod.New("p").NS(ns).App("main", testpod.GPU(1), testpod.Mem(1024)).AppRunning("main"))
	}
	w.pods = append(w.pods, testpod.New("p").NS("unlimited").App("main", testpod.GPU(1), testpod.Mem(1024)).AppRunning("main"))
	c := newNamespaceCollector(w.ledger(), fixedReservations(w.reservations))
	if n := testutil.CollectAndCount(c, "gpuadmit_resourcequota"); n != 3*3*3 {
		t.Errorf("gpuadmit_resourcequota has %d series, want 27 (3 limited namespaces × 3 resources × 3 types)", n)
	}
	if n := testutil.CollectAndCount(c, "gpuadmit_ledger_problems"); n != 4*5+3 {
		t.Errorf("gpuadmit_ledger_problems has %d series, want 23 (4 namespaces × 5 kinds + 3)", n)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// fixedReservations are the reservations of the namespaces' objects.
type fixedReservations map[string][]reservation.Reservation

func (f fixedReservations) Reserved(context.Context) (map[string][]reservation.Reservation, error) {
	return f, nil
}
