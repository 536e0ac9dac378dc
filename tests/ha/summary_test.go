package ha_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// TestSummaryHasOneWriter: of three replicas only the elected one writes
// the GPUUsage summaries (what `kubectl get gpuusage` shows); when it stops,
// another is elected and the summary keeps following the namespace.
func TestSummaryHasOneWriter(t *testing.T) {
	c := startHA(t, nil)
	k := fastClient(t, c)
	const ns = "summary"
	seed(t, c, ns, 16384)
	writers := func(skip int) []int {
		var out []int
		for i := range c.Replicas {
			if i == skip {
				continue
			}
			n, err := c.Metric(i, "gpuadmit_usage_summary_writes_total")
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				out = append(out, i)
			}
		}
		return out
	}
	summary := func(want string) {
		t.Helper()
		waitForState(t, "GPUMEM is "+want, func() (bool, string) {
			got, _, err := c.Kubectl(t.Context(), nil, "get", "gpuusage", "usage", "-n", ns, "-o", "jsonpath={.status.summary.gpumem}")
			return err == nil && got == want, fmt.Sprintf("GPUMEM is %q (%v)", got, err)
		})
	}
	// create creates one pod. The API server may have picked a keep-alive
	// connection to a replica that just stopped (an EOF for the review, the
	// race every HTTP/1.1 client has with a server closing idle
	// connections): that create is tried again, at most twice, logged;
	// this test is about who writes the summary, not about that race
	// (TestTerminateRounds counts it).
	create := func(name string) {
		t.Helper()
		for try := 0; ; try++ {
			_, err := k.CoreV1().Pods(ns).Create(t.Context(), creates.GPUPod(ns, name, "", 4096), metav1.CreateOptions{})
			var tl creates.Tally
			if tl.Record(err); err == nil || tl.Unavailable.Load() == 0 || try == 2 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Logf("create %s: %v; trying again", name, err)
			time.Sleep(200 * time.Millisecond)
		}
	}
	create("a")
	summary("4096/16384")
	w := writers(-1)
	if len(w) != 1 {
		t.Fatalf("replicas %v wrote summaries, want exactly one (the elected one)", w)
	}
	leader := w[0]
	if err := c.Terminate(leader); err != nil {
		t.Fatal(err)
	}
	c.Proxy.Reset() // no keep-alive connection to the stopped replica is reused
	time.Sleep(200 * time.Millisecond)
	create("b")
	summary("8192/16384")
	next := writers(leader)
	if len(next) != 1 {
		t.Fatalf("after %s stopped, replicas %v wrote summaries, want exactly one", c.Replicas[leader].Name, next)
	}
	t.Logf("%s wrote the summaries, then stopped; %s was elected and wrote them", c.Replicas[leader].Name, c.Replicas[next[0]].Name)
	if err := c.StartReplica(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(t.Context(), leader); err != nil {
		t.Fatal(err)
	}
	create("c")
	summary("12288/16384")
	if w := writers(-1); len(w) != 1 || w[0] != next[0] {
		t.Fatalf("after %s came back, replicas %v wrote summaries, want only %s", c.Replicas[leader].Name, w, c.Replicas[next[0]].Name)
	}
}
