package ha_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestClaimBurstAcrossReplicas: 100 concurrent creates of HAMi-DRA
// ResourceClaims (2048 MiB each), spread over the three replicas, against
// a quota that fits 10: exactly 10 admitted, every replica's ledger equal
// to a recount of the live claims; deleting them frees the quota and ends
// their reservations (a claim's reservation lasts as long as its claim).
func TestClaimBurstAcrossReplicas(t *testing.T) {
	c := startHA(t, func(i int) []string { return append(skewed(i), "--advertise-address=") })
	k := fastClient(t, c)
	for round := range 2 {
		ns := fmt.Sprintf("claims-%d", round)
		seed(t, c, ns, 10*2048)
		var tl creates.Tally
		var wg sync.WaitGroup
		for _, i := range rand.New(rand.NewPCG(uint64(round), 11)).Perm(100) {
			wg.Go(func() {
				_, err := k.ResourceV1().ResourceClaims(ns).Create(t.Context(), testclaim.HAMiDRA(ns, fmt.Sprintf("c-%03d", i), 1, 2048, 0), metav1.CreateOptions{})
				tl.Record(err)
			})
		}
		wg.Wait()
		s, err := c.Recount(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %s; %d claims use %d MiB", round, &tl, s.Claims, s.Used.Of("nvidia").MemMiB)
		if tl.Admitted.Load() != 10 || s.Claims != 10 || s.Used.Of("nvidia").MemMiB != 10*2048 || len(tl.Other) > 0 {
			t.Fatalf("round %d: want exactly 10 claims admitted (20480 MiB); other failures %q", round, tl.Other)
		}
		ledgersMatch(t, c, ns)
		if err := k.ResourceV1().ResourceClaims(ns).DeleteCollection(t.Context(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.WaitDrained(t.Context(), ns, time.Minute); err != nil {
			t.Fatalf("the deleted claims' reservations did not end: %v", err)
		}
		ledgersMatch(t, c, ns)
	}
	for i := range c.Replicas {
		decided, _ := c.Metric(i, "gpuadmit_admission_decisions_total", `webhook="validate-claims"`)
		t.Logf("%s decided %.0f claim reviews", c.Replicas[i].Name, decided)
		if decided == 0 {
			t.Errorf("%s decided no claim: the proxy did not spread the reviews", c.Replicas[i].Name)
		}
	}
}
