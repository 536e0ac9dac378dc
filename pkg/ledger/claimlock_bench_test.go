package ledger

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
)

// hostileSelector is a selector the API server accepts whose evaluation
// takes tens of milliseconds per device (3,600 additions reading the
// device); n makes each expression new, so that neither the
// compiled-selector cache nor the inventory's memo serves it.
func hostileSelector(n int) string {
	nums := make([]string, 60)
	for i := range nums {
		nums[i] = fmt.Sprint(i)
	}
	list := "[" + strings.Join(nums, ",") + "]"
	return fmt.Sprintf(`%s.all(i, %s.all(j, i + j + size(device.driver) >= 0)) || device.driver == "x%d"`, list, list, n)
}

// BenchmarkNamespaceBesideHostileSelector measures another namespace's
// Namespace() (what every decision reads) while a tenant's whole-GPU
// claims with a hostile selector are recorded without pause over 4
// published devices: the selectors are evaluated outside the ledger's
// lock, so the other namespace waits for none of them. Reported: the other
// namespace's reads (p50-ms, p99-ms, max-ms) and how long each hostile claim's
// record took (hostile-ms).
func BenchmarkNamespaceBesideHostileSelector(b *testing.B) {
	l := newWholeLedger(b)
	testns.Known(l, "victim", "tenant")
	l.UpsertSlice(gpuSlice("n1", map[string]int64{"gpu-0": 81920, "gpu-1": 81920, "gpu-2": 81920, "gpu-3": 81920}))
	own := wholeClaim("1", "n1", "")
	own.Namespace = "victim"
	l.UpsertClaim(own)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var evals, evalNs atomic.Int64
	started := make(chan struct{})
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c := wholeClaim(fmt.Sprint(i+10), "n1", "")
			c.Namespace, c.UID = "tenant", types.UID(fmt.Sprint("hostile-", i))
			c.Spec.Devices.Requests[0].Exactly.Selectors = append(c.Spec.Devices.Requests[0].Exactly.Selectors,
				resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: hostileSelector(i)}})
			if i == 0 {
				close(started)
			}
			start := time.Now()
			l.UpsertClaim(c)
			evalNs.Add(int64(time.Since(start)))
			evals.Add(1)
		}
	})
	<-started // the first hostile evaluation is under way
	var reads []time.Duration
	for b.Loop() {
		start := time.Now()
		if s := l.Namespace("victim", nil); s.Claims != 1 {
			b.Fatalf("victim: %d claims", s.Claims)
		}
		reads = append(reads, time.Since(start))
		// Pacing, not a wait for a condition: the reads sample the victim's
		// latency spread over the hostile evaluations (nothing is asserted
		// on time; without a pause the loop would measure one evaluation).
		time.Sleep(100 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	slices.Sort(reads)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(reads[len(reads)/2]), "p50-ms")
	b.ReportMetric(ms(reads[len(reads)*99/100]), "p99-ms")
	b.ReportMetric(ms(reads[len(reads)-1]), "max-ms")
	if n := evals.Load(); n > 0 {
		b.ReportMetric(float64(evalNs.Load())/float64(n)/1e6, "hostile-ms")
	}
}
