package serving_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/load/slowclient"
	"github.com/gpuadmit/gpuadmit/pkg/serving"
)

// TestLimits: requests over a limit are refused with the status that
// names it, before the handler runs.
func TestLimits(t *testing.T) {
	release := make(chan struct{})
	f := start(t, release, withLimits(serving.Limits{MaxBodyBytes: 1 << 10, MaxInFlight: 2, PerClientInFlight: 2}))
	c := f.httpClient(nil, "")
	if status, body, err := f.post(c, "/", strings.Repeat("x", 1<<10), nil); err != nil || status != 200 || body != "1024 replica=false" {
		t.Fatalf("a body at the limit: %d %q %v", status, body, err)
	}
	if status, body, err := f.post(c, "/", strings.Repeat("x", 1<<10+1), nil); err != nil || status != 413 || !strings.Contains(body, "limit is 1024 bytes") {
		t.Fatalf("a body over the limit: %d %q %v, want 413", status, body, err)
	}
	// Two requests held in the handler fill the in-flight limit (for
	// another address too).
	var wg sync.WaitGroup
	defer wg.Wait()
	released := sync.OnceFunc(func() { close(release) })
	defer released()
	for range 2 {
		wg.Go(func() { _, _, _ = f.post(f.httpClient(nil, ""), "/block", "", nil) })
	}
	waitFor(t, "2 requests reached the handler", func() bool { return f.blocked.Load() >= 2 })
	if status, body, err := f.post(f.httpClient(nil, "127.0.0.2"), "/", "", nil); err != nil || status != 503 || !strings.Contains(body, "handling 2 requests, its limit") {
		t.Fatalf("with 2 requests in flight: %d %q %v, want 503", status, body, err)
	}
	released()
	wg.Wait()
	if refused(t, f, "too-large") != 1 || refused(t, f, "busy") == 0 {
		t.Errorf("refusals not counted: too-large %v, busy %v", refused(t, f, "too-large"), refused(t, f, "busy"))
	}
}

// TestSlowClients: 100 clients from one address each send all but the last
// byte of a 7 MiB body and stall. The server holds at most that address's
// share of the body budget (16 MiB) plus a bounded cost per connection; a
// review from another address (the API server's) is answered at once; the
// stalled clients are cut off after ReadTimeout. (The HAMi-style review a
// real API server sends is tens of KiB.)
func TestSlowClients(t *testing.T) {
	const clients, body = 100, 7 << 20
	f := start(t, nil, withLimits(serving.Limits{ReadTimeout: 3 * time.Second}))
	before := heap()
	crowd := slowclient.Start(f.addr, "127.0.0.2", "/validate", clients, body)
	// Let them connect and send what the server reads. The one sleep left
	// in these tests: what the server has read of a stalled body gives no
	// signal to wait on, and the bounds below are measured after it.
	time.Sleep(time.Second)
	during := heap()
	start := time.Now()
	status, answer, err := f.post(f.httpClient(nil, "127.0.0.1"), "/validate", `{"kind":"AdmissionReview"}`, nil)
	took := time.Since(start)
	if errs := crowd.Wait(); len(errs) > 0 {
		t.Errorf("slow clients: %v", errs[0])
	}
	grew := int64(during) - int64(before)
	t.Logf("heap grew %d MiB with %d stalled clients; the genuine review took %s", grew>>20, clients, took.Round(time.Millisecond))
	if err != nil || status != 200 || answer != "26 replica=false" {
		t.Fatalf("genuine review: %d %q %v", status, answer, err)
	}
	if took > time.Second {
		t.Errorf("genuine review took %s, want < 1s", took)
	}
	// Bound: one address's share (16 MiB) and 100 connections' TLS and
	// HTTP buffers (well under 256 KiB each).
	if limit := int64(16<<20 + clients*256<<10); grew > limit {
		t.Errorf("heap grew %d MiB, want at most %d MiB", grew>>20, limit>>20)
	}
	if refused(t, f, "body-budget")+refused(t, f, "read") < clients-3 {
		t.Errorf("stalled clients not cut off: body-budget %v, read %v", refused(t, f, "body-budget"), refused(t, f, "read"))
	}
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
