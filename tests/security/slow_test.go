package security_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/load/creates"
	"github.com/gpuadmit/gpuadmit/internal/load/slowclient"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// TestSlowClientsCannotTakeTheWebhookDown: 100 clients each send all but
// the last byte of a 7 MiB review to the webhook port and stall (measured
// before: 48 such clients held 404 MiB for 42 s and more; about 60 OOM a
// replica with the chart's 512 Mi limit). The server holds at most one
// client address's share of the body budget (16 MiB) plus a bounded cost
// per connection, cuts the stalled clients off after its read timeout, and
// the API server's reviews (another address) are answered meanwhile: a GPU
// pod create through the API server takes well under a second.
func TestSlowClientsCannotTakeTheWebhookDown(t *testing.T) {
	const clients, body = 100, 7 << 20
	c := startOpen(t)
	ctx := t.Context()
	seed(t, c, "slow", 24576)
	before := heapInUse()
	crowd := slowclient.Start(fmt.Sprintf("127.0.0.1:%d", c.Port), "127.0.0.2", server.ValidatePath, clients, body)
	time.Sleep(time.Second)
	during := heapInUse()
	start := time.Now()
	err := createPod(ctx, c, creates.GPUPod("slow", "genuine", "", 1024))
	took := time.Since(start)
	if errs := crowd.Wait(); len(errs) > 0 {
		t.Errorf("slow clients: %v", errs[0])
	}
	grew := int64(during) - int64(before)
	t.Logf("heap grew %d MiB with %d stalled clients (the test's own side included); a GPU pod create took %s", grew>>20, clients, took.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("a genuine create during the attack: %v", err)
	}
	if took > time.Second {
		t.Errorf("a genuine create took %s during the attack, want < 1s", took)
	}
	if limit := int64(16<<20 + clients*256<<10); grew > limit {
		t.Errorf("heap grew %d MiB, want at most %d MiB", grew>>20, limit>>20)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
