package ha_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// BenchmarkCreateLatency measures what a GPU pod create costs through the
// API server, in one run on one control plane: with gpuadmit's webhooks
// served by three replicas, then by the same three answering each review
// before its reservation is written (the ceiling: a test build's switch,
// --test-answer-before-write; the write still happens, in the background),
// then by one (the others stopped), then with the
// webhook configurations removed, then with Kubernetes' own ResourceQuota
// on the GPU requests instead (the in-tree admission writes its status per
// create: the anchor of the three replicas' row). Each op is 500 creates from 8 clients;
// it reports the creates' p50 and p99, the CPU each kind of process spent
// per create (the API server, the replicas, and all of them with etcd and
// the clients: on 2 cores the three replicas' row is CPU-bound, so its
// latency follows that sum) and, with webhooks, the mean time the replicas
// spent in each review (from their duration histograms): the rest is the
// API server's (TLS, two webhook calls, etcd writes). After each run with
// webhooks it recounts: once the reservations drained, every serving
// replica's ledger must equal the live pods, within the namespace's limit.
//
//	go test ./tests/ha -run '^$' -bench CreateLatency -benchtime 1x
func BenchmarkCreateLatency(b *testing.B) {
	args, pprofAddrs := benchArgs(b)
	c := startHA(b, args)
	k, err := c.FastClient()
	if err != nil {
		b.Fatal(err)
	}
	const ns = "latency"
	seed(b, c, ns, benchLimitMiB)
	run := 0
	creates := func(b *testing.B, serving []int) {
		for b.Loop() {
			run++
			before, cpuBefore, trafficBefore := reviewTimes(b, c, serving), cpuSeconds(b), apiTraffic(b, c.Kube)
			wait := profiled{k: c.Kube, pprof: pprofAddrs, serving: serving}.start(b, "3")
			lat := createAll(b, k, ns, fmt.Sprintf("r%d-", run), 500, 8)
			wait()
			after, cpuAfter := reviewTimes(b, c, serving), cpuSeconds(b)
			reportCPU(b, cpuBefore, cpuAfter, len(lat))
			apiTraffic(b, c.Kube).report(b, trafficBefore, len(lat))
			if len(serving) > 0 {
				recount(b, c, ns, serving)
			}
			b.ReportMetric(ms(percentile(lat, 50)), "p50-ms")
			b.ReportMetric(ms(percentile(lat, 99)), "p99-ms")
			for _, hook := range []string{"mutate", "validate"} {
				if n := after[hook].n - before[hook].n; n > 0 {
					b.ReportMetric(1000*(after[hook].sum-before[hook].sum)/n, hook+"-mean-ms")
				}
			}
			if len(serving) > 0 {
				b.ReportMetric(after["conflicts"].sum-before["conflicts"].sum, "conflicts")
				for _, cause := range conflictCauses {
					key := "conflicts-" + cause
					b.ReportMetric(after[key].sum-before[key].sum, key)
				}
				w, g := after["writes"], after["groups"]
				w.sum, w.n, g.sum, g.n = w.sum-before["writes"].sum, w.n-before["writes"].n, g.sum-before["groups"].sum, g.n-before["groups"].n
				if w.n > 0 {
					b.ReportMetric(1000*w.sum/w.n, "write-mean-ms")
					b.ReportMetric(w.n, "writes")
					b.ReportMetric(g.sum/g.n, "reviews/write")
				}
			}
		}
	}
	createAll(b, k, ns, "warm-", 100, 8) // connections, caches and the JIT of the policies
	b.Run("webhooks=3-replicas", func(b *testing.B) { creates(b, []int{0, 1, 2}) })
	// The ceiling: the same three replicas answering each pod's review
	// before its reservation is written (the write still happens, in the
	// background): what a create could cost at best if a replica admitted
	// inside a share of the headroom granted to it in advance.
	restart(b, c, []int{0, 1, 2}, "--"+testhooks.AnswerBeforeWriteFlag)
	createAll(b, k, ns, "ceiling-warm-", 100, 8)
	b.Run("webhooks=3-replicas,ceiling", func(b *testing.B) { creates(b, []int{0, 1, 2}) })
	restart(b, c, []int{0})
	for _, i := range []int{1, 2} {
		if err := c.Terminate(i); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the proxy's health checks take the stopped replicas out
	createAll(b, k, ns, "one-warm-", 100, 8)
	b.Run("webhooks=1-replica", func(b *testing.B) { creates(b, []int{0}) })
	adm := c.Kube.AdmissionregistrationV1()
	if err := adm.ValidatingWebhookConfigurations().Delete(b.Context(), "gpuadmit", metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := adm.MutatingWebhookConfigurations().Delete(b.Context(), "gpuadmit", metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the API server's webhook configuration informer
	b.Run("webhooks=none", func(b *testing.B) { creates(b, nil) })
	nativeQuota(b, c, ns)
	b.Run("webhooks=none,native-quota", func(b *testing.B) { creates(b, nil) })
}

// restart stops replicas which (SIGTERM) and starts them again with the
// extra flags, waiting until each is ready and in the proxy's rotation.
func restart(b *testing.B, c *replicas.Cluster, which []int, extra ...string) {
	b.Helper()
	for _, i := range which {
		if err := c.Terminate(i); err != nil {
			b.Fatal(err)
		}
		if err := c.StartReplica(i, extra...); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitReady(b.Context(), i); err != nil {
			b.Fatal(err)
		}
	}
}

// recount checks, after a run's creates, that nothing was admitted that
// the ledgers do not count: once the namespace's reservations drained,
// every serving replica's ledger equals a recount of the live pods (which
// is under the namespace's limit: the API server holds them all).
func recount(b *testing.B, c *replicas.Cluster, ns string, serving []int) {
	b.Helper()
	if _, err := c.WaitDrained(b.Context(), ns, time.Minute); err != nil {
		b.Fatal(err)
	}
	_, want := livePods(b, c, ns)
	if want > benchLimitMiB {
		b.Fatalf("over-admitted: the live pods of %s ask %d MiB, over the limit %d", ns, want, benchLimitMiB)
	}
	for _, i := range serving {
		waitForState(b, c.Replicas[i].Name+"'s ledger of "+ns+" equals the live pods", func() (bool, string) {
			used, err := c.Metric(i, "gpuadmit_resourcequota", `namespace="`+ns+`"`, `resource="nvidia.com/gpumem"`, `type="used"`)
			return err == nil && int64(used) == want, fmt.Sprintf("%v MiB used (%v); the live pods use %d MiB", used, err, want)
		})
	}
}

// nativeQuota puts Kubernetes' own ResourceQuota on the GPU requests in ns,
// its status initialised as the quota controller would (envtest runs no
// controller manager; the in-tree admission refuses creates against a
// quota whose status it does not know): the in-tree admission then checks
// and writes the quota's status on every create, in process and batched —
// the anchor gpuadmit's rows compare with.
func nativeQuota(b *testing.B, c *replicas.Cluster, ns string) {
	b.Helper()
	ctx := b.Context()
	hard := corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("1000000"),
		"requests.nvidia.com/gpumem": resource.MustParse("1000000000000")}
	q, err := c.Kube.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "native-gpu"},
		Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	pods, err := c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	var gpus, mem int64
	for i := range pods.Items {
		for _, ctr := range pods.Items[i].Spec.Containers {
			gpus += ctr.Resources.Requests.Name("nvidia.com/gpu", resource.DecimalSI).Value()
			mem += ctr.Resources.Requests.Name("nvidia.com/gpumem", resource.DecimalSI).Value()
		}
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{
		"requests.nvidia.com/gpu": *resource.NewQuantity(gpus, resource.DecimalSI), "requests.nvidia.com/gpumem": *resource.NewQuantity(mem, resource.DecimalSI)}}
	if _, err := c.Kube.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		b.Fatal(err)
	}
	// The admission plugin reads quotas through its informer.
	time.Sleep(2 * time.Second)
	before := len(pods.Items)
	createAll(b, c.Kube, ns, "native-warm-", 1, 1)
	got, err := c.Kube.CoreV1().ResourceQuotas(ns).Get(ctx, "native-gpu", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if used := got.Status.Used["requests.nvidia.com/gpu"]; used.Value() != gpus+1 {
		b.Fatalf("the native quota did not count the create (%d pods before): used %s, want %d", before, used.String(), gpus+1)
	}
}

// createAll creates n GPU pods from clients goroutines and returns each
// create's latency; a failed create fails b.
func createAll(b *testing.B, k kubernetes.Interface, ns, prefix string, n, clients int) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	for range clients {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				start := time.Now()
				_, err := k.CoreV1().Pods(ns).Create(context.Background(), creates.GPUPod(ns, fmt.Sprintf("%s%04d", prefix, i), "", 1024), metav1.CreateOptions{})
				lat[i] = time.Since(start)
				if err != nil {
					failed.Store(err)
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("a create failed: %v", err)
	}
	return lat
}

// benchLimitMiB is the bench namespace's gpumem limit: room for every
// create of the run (the bench measures admitted creates).
const benchLimitMiB = 1 << 29

type histogram struct{ sum, n float64 }

// conflictCauses are the causes gpuadmit_reservation_conflicts_total counts
// conflicts by. A summary write cannot cause one: the summaries are in
// GPUUsage, the reservations in GPUReservationSet.
var conflictCauses = []string{"admission", "tidy", "unknown"}

// reviewTimes sums the replicas' review duration histograms per webhook,
// their conflicting writes ("conflicts", and by the cause of the write that
// came first: "conflicts-admission", ...), their GPUReservationSet write durations
// ("writes") and reviews per write ("groups").
func reviewTimes(b *testing.B, c *replicas.Cluster, serving []int) map[string]histogram {
	b.Helper()
	out := map[string]histogram{}
	for _, i := range serving {
		for _, hook := range []string{"mutate", "validate"} {
			sum, err1 := c.Metric(i, "gpuadmit_admission_duration_seconds_sum", `webhook="`+hook+`"`)
			n, err2 := c.Metric(i, "gpuadmit_admission_duration_seconds_count", `webhook="`+hook+`"`)
			if err1 != nil || err2 != nil {
				b.Fatalf("metrics of %s: %v %v", c.Replicas[i].Name, err1, err2)
			}
			h := out[hook]
			h.sum, h.n = h.sum+sum, h.n+n
			out[hook] = h
		}
		for _, cause := range conflictCauses {
			conflicts, err := c.Metric(i, "gpuadmit_reservation_conflicts_total", `cause="`+cause+`"`)
			if err != nil {
				b.Fatal(err)
			}
			for _, key := range []string{"conflicts", "conflicts-" + cause} {
				h := out[key]
				h.sum += conflicts
				out[key] = h
			}
		}
		for key, name := range map[string]string{"writes": "gpuadmit_gpuusage_write_duration_seconds", "groups": "gpuadmit_gpuusage_write_group_size"} {
			sum, err1 := c.Metric(i, name+"_sum")
			n, err2 := c.Metric(i, name+"_count")
			if err1 != nil || err2 != nil {
				b.Fatalf("metrics of %s: %v %v", c.Replicas[i].Name, err1, err2)
			}
			h := out[key]
			h.sum, h.n = h.sum+sum, h.n+n
			out[key] = h
		}
	}
	return out
}

func percentile(lat []time.Duration, p int) time.Duration {
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
