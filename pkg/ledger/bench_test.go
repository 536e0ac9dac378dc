package ledger

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// benchPod is a GPU pod shaped like the seed's (init 20 GiB, app 10 GiB, a
// sidecar), bound to one of 1000 nodes, at init or steady stage.
func benchPod(i int, steady bool) *corev1.Pod {
	b := testpod.New(fmt.Sprintf("pod-%d", i)).NS(fmt.Sprintf("team-%d", i%200)).UID(fmt.Sprintf("uid-%d", i)).
		Sidecar("proxy", gpu(1), mem(512)).Init("convert", gpu(1), mem(20480), cores(30)).App("server", gpu(1), mem(10240), cores(20)).
		Node(fmt.Sprintf("node-%d", i%1000)).Devices("GPU-a,NVIDIA,512,0:;GPU-a,NVIDIA,20480,30:;GPU-b,NVIDIA,10240,20:;")
	if steady {
		b.InitRunning("proxy").InitTerminated("convert", 0).AppRunning("server")
	} else {
		b.InitRunning("proxy").InitRunning("convert")
	}
	return b.Build()
}

// fullPod dresses a pod like the API server returns it: managedFields, labels,
// env, volumes, conditions, last-applied annotation.
func fullPod(p *corev1.Pod) *corev1.Pod {
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, FieldsV1: metav1.NewFieldsV1(strings.Repeat("f", 1500))},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", FieldsV1: metav1.NewFieldsV1(strings.Repeat("f", 1200))},
	}
	p.Labels = map[string]string{"app": "llm", "pod-template-hash": "5d8f9c7b6"}
	p.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = string(make([]byte, 800))
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = []corev1.EnvVar{{Name: "MODEL", Value: "llama"}, {Name: "PORT", Value: "8080"}}
		p.Spec.Containers[i].VolumeMounts = []corev1.VolumeMount{{Name: "weights", MountPath: "/weights"}}
	}
	p.Spec.Volumes = []corev1.Volume{{Name: "weights"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	return p
}

func benchLedger(b *testing.B, pods int) *Ledger {
	b.Helper()
	l := New(Options{Families: []effective.Family{effective.Nvidia()}, Log: logr.Discard()})
	for i := range 1000 {
		l.UpsertNode(testnode.WithDevices(fmt.Sprintf("node-%d", i), map[string]string{"zone": fmt.Sprint(i % 3)}, dev("GPU-a", 24576), dev("GPU-b", 24576)))
	}
	for i := range 200 {
		l.UpsertQuota(testquota.New(fmt.Sprintf("team-%d", i), "gpu", map[string]string{"limits.nvidia.com/gpumem": "1000000"}))
	}
	for i := range pods {
		l.UpsertPod(benchPod(i, i%2 == 0))
	}
	return l
}

// BenchmarkPodUpdate: one status change (init running <-> finished) of a pod
// among 10k: re-derive, subtract stored, add target.
func BenchmarkPodUpdate(b *testing.B) {
	l := benchLedger(b, 10_000)
	versions := [2]*corev1.Pod{benchPod(7, false), benchPod(7, true)}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.UpsertPod(versions[i%2])
	}
}

// BenchmarkPodUpdateDuplicate: a resync or duplicate event (nothing changes).
func BenchmarkPodUpdateDuplicate(b *testing.B) {
	l := benchLedger(b, 10_000)
	p := benchPod(7, true)
	b.ReportAllocs()
	for b.Loop() {
		l.UpsertPod(p)
	}
}

// BenchmarkPodAddDelete: a pod created and deleted among 10k.
func BenchmarkPodAddDelete(b *testing.B) {
	l := benchLedger(b, 10_000)
	p := benchPod(10_001, false)
	b.ReportAllocs()
	for b.Loop() {
		l.UpsertPod(p)
		l.DeletePod(p)
	}
}

// BenchmarkNamespaceSnapshot: what admission reads per request (10k pods).
func BenchmarkNamespaceSnapshot(b *testing.B) {
	l := benchLedger(b, 10_000)
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Namespace("team-7", nil)
		_ = l.Capacity()
	}
}

// BenchmarkNamespaceSnapshotReserved: the same with eight reservations of
// the namespace to count.
func BenchmarkNamespaceSnapshotReserved(b *testing.B) {
	l := benchLedger(b, 10_000)
	rs := make([]reservation.Reservation, 8)
	for i := range rs {
		rs[i] = reservation.Reservation{UID: types.UID(fmt.Sprint("r", i)), Name: fmt.Sprint("p", i), Demand: nv(1, 1024, 0)}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Namespace("team-7", rs)
	}
}

// Benchmark100kPodsListed: a relist of 100k GPU pods as the informer sees
// them (full objects, transformed, stored) accounted into an empty ledger.
// Reports the wall time per 100k pods and the heap held afterwards by the
// slim pods (the informer store) and the ledger together, and by the
// ledger alone.
func Benchmark100kPodsListed(b *testing.B) {
	const n = 100_000
	templates := make([]*corev1.Pod, 64)
	for i := range templates {
		templates[i] = fullPod(benchPod(i, i%2 == 0))
	}
	transform := podwire.PodTransform([]effective.Family{effective.Nvidia()})
	var ms runtime.MemStats
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		base := ms.HeapAlloc
		b.StartTimer()
		start := time.Now()
		store := make([]*corev1.Pod, 0, n)
		for i := range n {
			p := *templates[i%len(templates)] // what the decoder hands the reflector
			p.Name, p.UID = fmt.Sprint("pod-", i), types.UID(fmt.Sprint("uid-", i))
			p.Namespace, p.Spec.NodeName = fmt.Sprint("team-", i%200), fmt.Sprint("node-", i%1000)
			out, err := transform(&p)
			if err != nil {
				b.Fatal(err)
			}
			store = append(store, out.(*corev1.Pod))
		}
		elapsed := time.Since(start)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		storeHeap := ms.HeapAlloc
		b.StartTimer()
		start = time.Now()
		l := New(Options{Families: []effective.Family{effective.Nvidia()}, Log: logr.Discard()})
		for _, p := range store {
			l.UpsertPod(p)
		}
		elapsed += time.Since(start)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if st := l.Snapshot(nil).Stats; st.Pods != n {
			b.Fatalf("%d pods recorded, want %d", st.Pods, n)
		}
		b.ReportMetric(elapsed.Seconds(), "s/100kpods")
		b.ReportMetric(float64(ms.HeapAlloc-base)/(1<<20), "heap-MiB")
		b.ReportMetric(float64(ms.HeapAlloc-storeHeap)/(1<<20), "ledger-MiB")
		runtime.KeepAlive(store)
		b.StartTimer()
	}
}
