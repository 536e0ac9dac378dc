package ha_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestBurstAcrossReplicas: 200 concurrent creates, spread over the three
// replicas, against a quota that fits 20: exactly 20 admitted, five times
// with different orders, half of them with generateName. The replicas do
// not forward reviews to the namespace's owner here: every replica decides
// and the compare-and-swap write alone keeps the quota.
func TestBurstAcrossReplicas(t *testing.T) {
	c := startHA(t, func(i int) []string { return append(skewed(i), "--advertise-address=") })
	k := fastClient(t, c)
	for round := range 5 {
		ns := fmt.Sprintf("burst-%d", round)
		seed(t, c, ns, 20*1024)
		order := rand.New(rand.NewPCG(uint64(round), 7)).Perm(200)
		var tl creates.Tally
		var wg sync.WaitGroup
		for _, i := range order {
			wg.Go(func() {
				p := creates.GPUPod(ns, fmt.Sprintf("p-%03d", i), "", 1024)
				if i%2 == 0 {
					p = creates.GPUPod(ns, "", "g-", 1024)
				}
				_, err := k.CoreV1().Pods(ns).Create(t.Context(), p, metav1.CreateOptions{})
				tl.Record(err)
			})
		}
		wg.Wait()
		pods, mem := livePods(t, c, ns)
		t.Logf("round %d: %s; %d pods use %d MiB", round, &tl, pods, mem)
		if tl.Admitted.Load() != 20 || pods != 20 || len(tl.Other) > 0 {
			t.Fatalf("round %d: want exactly 20 admitted; other failures %q", round, tl.Other)
		}
		waitDrained(t, c, ns)
		ledgersMatch(t, c, ns)
	}
	races := 0.0
	for i := range c.Replicas {
		decided, _ := c.Metric(i, "gpuadmit_admission_decisions_total", `webhook="validate"`)
		conflicts, _ := c.Metric(i, "gpuadmit_reservation_conflicts_total")
		t.Logf("%s decided %.0f reviews; %.0f of its writes lost a race to another replica and were decided again", c.Replicas[i].Name, decided, conflicts)
		if decided == 0 {
			t.Errorf("%s decided nothing: the proxy did not spread the reviews", c.Replicas[i].Name)
		}
		races += conflicts
	}
	if races == 0 {
		t.Error("no write lost a race: the burst did not make the replicas compete")
	}
}
