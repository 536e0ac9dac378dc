package feed

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/go-logr/logr"
)

// TestFreshness: a watch is stale when, StaleAfter after the API server
// reported a resourceVersion, it has not reached it (a bookmark a minute
// keeps a quiet watch fresh), or when the API server has not answered for
// StaleAfter; it is fresh again once it catches up.
func TestFreshness(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	f := &freshness{opts: FreshnessOptions{StaleAfter: 3 * time.Minute, Clock: clk}, log: logr.Discard(),
		resources: map[string]*watchState{"pods": {}, "nodes": {}}}
	step := func(d time.Duration, resource, probed string, err error, watched string) {
		clk.SetTime(clk.Now().Add(d))
		f.record(resource, clk.Now(), probed, err, watched)
	}
	// A quiet cluster: the API server moves on (other objects change), the
	// pod watch follows through bookmarks about once a minute.
	rv := 100
	watched := 100
	for i := range 40 { // 10 minutes of 15 s probes
		rv += 7
		if i%4 == 3 {
			watched = rv
		}
		step(15*time.Second, "pods", itoa(rv), nil, itoa(watched))
		if s := f.stale(); s != "" {
			t.Fatalf("probe %d: a watch that keeps up through bookmarks is stale: %s", i, s)
		}
	}
	// The watch stalls (half-open connection): it stays at its RV.
	stalledAt := watched
	for i := range 16 { // 4 minutes
		rv += 7
		step(15*time.Second, "pods", itoa(rv), nil, itoa(stalledAt))
		if i < 11 && f.stale() != "" {
			t.Fatalf("stale after only %d probes", i+1)
		}
	}
	if s := f.stale(); !strings.HasPrefix(s, "pods: the watch is at resourceVersion") {
		t.Fatalf("stalled for 4 minutes: stale = %q", s)
	}
	if !f.perResource()["pods"] || f.perResource()["nodes"] {
		t.Errorf("per resource: %v", f.perResource())
	}
	// The connection is reset: the informer relists and catches up.
	step(15*time.Second, "pods", itoa(rv), nil, itoa(rv))
	if s := f.stale(); s != "" {
		t.Fatalf("caught up, still stale: %s", s)
	}
	// The API server cannot be reached at all.
	for range 13 {
		step(15*time.Second, "nodes", "", errors.New("context deadline exceeded"), "50")
	}
	if s := f.stale(); !strings.Contains(s, "nodes: the API server has not answered for 3m") {
		t.Fatalf("unreachable for 3m15s: stale = %q", s)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
