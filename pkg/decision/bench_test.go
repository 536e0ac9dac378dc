package decision

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/load/benchtimer"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// benchLedger holds 1000 two-GPU nodes, 200 namespaces with a memory quota
// and n GPU pods (sidecar, init, app; half of them past their init).
func benchLedger(b testing.TB, n int) *ledger.Ledger {
	b.Helper()
	l := ledger.New(ledger.Options{Families: config.Families(config.Default()), Log: logr.Discard()})
	for i := range 1000 {
		l.UpsertNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i),
			Labels: map[string]string{"zone": fmt.Sprint(i % 3)},
			Annotations: map[string]string{"gpuadmit.io/gpu-devices": `[{"uuid":"GPU-a","index":0,"memoryMiB":81920,"cores":100,"healthy":true},` +
				`{"uuid":"GPU-b","index":1,"memoryMiB":81920,"cores":100,"healthy":true}]`}}})
	}
	for i := range 200 {
		ns := fmt.Sprintf("team-%d", i)
		l.UpsertNamespace(testns.New(ns, map[string]string{"kubernetes.io/metadata.name": ns, "team": ns, "gpu-tier": "gold"}))
		l.UpsertQuota(&corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%d", i), Name: "gpu"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"limits.nvidia.com/gpumem": resource.MustParse("10000000"),
				"limits.nvidia.com/gpu": resource.MustParse("1000")}}})
	}
	gpu, mem, cores := testpod.GPU, testpod.Mem, testpod.Cores
	for i := range n {
		p := testpod.New(fmt.Sprintf("pod-%d", i)).NS(fmt.Sprintf("team-%d", i%200)).UID(fmt.Sprintf("uid-%d", i)).
			Sidecar("proxy", gpu(1), mem(512)).Init("convert", gpu(1), mem(20480), cores(30)).App("server", gpu(1), mem(10240), cores(20)).
			Node(fmt.Sprintf("node-%d", i%1000)).Devices("GPU-a,NVIDIA,512,0:;GPU-a,NVIDIA,20480,30:;GPU-b,NVIDIA,10240,20:;")
		if i%2 == 0 {
			p.InitRunning("proxy").InitTerminated("convert", 0).AppRunning("server")
		} else {
			p.InitRunning("proxy").InitRunning("convert")
		}
		l.UpsertPod(p.Build())
	}
	return l
}

// benchPod is a typical 5-container GPU pod: a sidecar, two init
// containers, two app containers; a Deployment's labels and two
// annotations.
func benchPod() *corev1.Pod {
	gpu, mem, cores := testpod.GPU, testpod.Mem, testpod.Cores
	return testpod.New("llm-7").NS("team-7").
		Label("app", "llm").Label("team", "team-7").Label("cost-center", "4711").Label("pod-template-hash", "5d8f7c9b6").
		Annotate("kubectl.kubernetes.io/restartedAt", "2026-11-30T10:00:00Z").Annotate("gpuadmit.io/effective", `{"gpu":2,"gpumem":20992,"gpucores":30}`).
		Sidecar("proxy", gpu(1), mem(512)).
		Init("download", gpu(1), mem(4096)).Init("convert", gpu(1), mem(20480), cores(30)).
		App("server", gpu(1), mem(10240), cores(20)).App("metrics", testpod.CPU("100m")).
		Build()
}

// BenchmarkDecide is the whole decision without HTTP: fast-path check,
// eligible nodes (cached), demand, namespace snapshot among 10k pods,
// input document, Rego evaluation.
func BenchmarkDecide(b *testing.B) {
	l := benchLedger(b, 10_000)
	e := policy.New(policy.Options{})
	ctx := context.Background()
	if err := e.Load(ctx); err != nil {
		b.Fatal(err)
	}
	d, err := New(e, l, config.Default(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	req := Request{Pod: benchPod(), User: UserInfo{Username: "system:serviceaccount:kube-system:replicaset-controller",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}}}
	if res, err := d.Decide(ctx, req); err != nil || !res.Allowed || res.Effective.Of(d.families[0].Name).MemMiB != 20992 {
		b.Fatalf("decision %+v, %v", res, err)
	}
	t := benchtimer.New()
	b.ReportAllocs()
	for b.Loop() {
		t.Begin()
		if _, err := d.Decide(ctx, req); err != nil {
			b.Fatal(err)
		}
		t.End()
	}
	t.Report(b)
}

// BenchmarkDecideGo makes the same checks hand-written in Go (no input
// document, no Rego) after the same preparation, for the ratio.
func BenchmarkDecideGo(b *testing.B) {
	l := benchLedger(b, 10_000)
	d, err := New(nil, l, config.Default(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	if denials := goDecide(d, pod); len(denials) != 0 {
		b.Fatalf("denials %q", denials)
	}
	t := benchtimer.New()
	b.ReportAllocs()
	for b.Loop() {
		t.Begin()
		goDecide(d, pod)
		t.End()
	}
	t.Report(b)
}

// goDecide is the default policies' namespace-limit and satisfiability
// checks written in Go (the nvidia family's).
func goDecide(d *Decider, pod *corev1.Pod) []string {
	dems, err := d.Demand(context.Background(), pod)
	if err != nil {
		return []string{err.Error()}
	}
	f := &d.families[0]
	dem := dems.Of(f.Name)
	if dem == nil {
		return nil
	}
	view, _, err := d.nodes(pod)
	if err != nil {
		return []string{err.Error()}
	}
	ns := d.snap.Namespace(pod.Namespace, nil)
	var denials []string
	check := func(name string, need, used, reserved int64, l *ledger.Limit) {
		if l != nil && need > 0 && used+reserved+need > l.Value {
			denials = append(denials, fmt.Sprintf("namespace %q: %s: pod needs %d, %d used + %d reserved, limit %d (ResourceQuota %q %s)",
				pod.Namespace, name, need, used, reserved, l.Value, l.Quota, l.Key))
		}
	}
	n, used, reserved, lim := f.Names, ns.Used.Of(f.Name), ns.Reserved.Of(f.Name), ns.Limits[f.Name]
	check(string(n.Count), dem.Effective.GPU, used.GPU, reserved.GPU, lim.GPU)
	check(string(n.Memory), dem.Effective.MemMiB, used.MemMiB, reserved.MemMiB, lim.MemMiB)
	check(string(n.Cores), dem.Effective.Cores, used.Cores, reserved.Cores, lim.Cores)
	for _, c := range dem.Containers {
		if c.Count == 0 || c.Unresolved {
			continue
		}
		fits := slices.ContainsFunc(view.shapes, func(s *shape) bool {
			var big int64
			for _, dv := range s.devices {
				if dv.memMiB >= c.MemPerDeviceMiB && dv.cores >= c.CoresPerDevice {
					big++
				}
			}
			return big >= c.Count
		})
		if !fits {
			denials = append(denials, fmt.Sprintf("container %q: no eligible node", c.Name))
		}
	}
	return denials
}

// BenchmarkEval is the Rego evaluation alone, on the input Decide builds.
func BenchmarkEval(b *testing.B) {
	l := benchLedger(b, 100)
	e := policy.New(policy.Options{})
	ctx := context.Background()
	if err := e.Load(ctx); err != nil {
		b.Fatal(err)
	}
	d, err := New(e, l, config.Default(), logr.Discard())
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	view, capVal, err := d.nodes(pod)
	if err != nil {
		b.Fatal(err)
	}
	f := d.families[0]
	dem, err := effective.ComputeAll(pod, d.families, map[string]effective.Options{f.Name: {DeviceMemoryMiB: 81920}})
	if err != nil {
		b.Fatal(err)
	}
	doc := &inputDoc{req: Request{Pod: pod, Operation: "CREATE"}, namespace: "team-7", primary: f.Name, demand: dem,
		ns: l.Namespace("team-7", nil), capacity: capVal, settings: d.settingsVal, view: view, nearLimit: d.nearLimit, words: d.words}
	in := doc.value(policy.AllReads())
	t := benchtimer.New()
	b.ReportAllocs()
	for b.Loop() {
		t.Begin()
		if _, err := e.Eval(ctx, in); err != nil {
			b.Fatal(err)
		}
		t.End()
	}
	t.Report(b)
}
