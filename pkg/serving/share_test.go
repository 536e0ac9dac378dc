package serving_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuadmit/gpuadmit/internal/load/slowclient"
	"github.com/gpuadmit/gpuadmit/pkg/serving"
)

// TestOneAddressCannotStarveAnother attacks the in-flight cap (8 here, a
// share of 2 per address) from other loopback addresses while the API
// server's reviews come from 127.0.0.1: requests held in the handler from
// one address, stalled 16-byte bodies from one address, and stalled bodies
// from eight addresses. Every review from 127.0.0.1 is answered 200 while
// the attackers hold what they can. (Without the per-address share, the
// first two fill the cap; if a request took its slot before its body was
// read, the third would.)
func TestOneAddressCannotStarveAnother(t *testing.T) {
	const inFlight, share = 8, 2
	tests := []struct {
		name string
		// attack starts the attackers and waits until they hold what they
		// can; it returns what ends them.
		attack func(t *testing.T, f *fixture) (stop func())
		// refusedShare is how many of the attackers' requests the share
		// refuses.
		refusedShare float64
	}{
		{name: "requests held in the handler from one address", refusedShare: 4*inFlight - share,
			attack: func(t *testing.T, f *fixture) func() { return holdInHandler(t, f, "127.0.0.2", 4*inFlight) }},
		{name: "stalled 16-byte bodies from one address", refusedShare: 4*inFlight - share,
			attack: func(t *testing.T, f *fixture) func() {
				return stall(t, f, []string{"127.0.0.2"}, 4*inFlight, 4*inFlight-share)
			}},
		{name: "stalled 16-byte bodies from eight addresses", refusedShare: 8,
			attack: func(t *testing.T, f *fixture) func() {
				var from []string
				for i := range 8 {
					from = append(from, fmt.Sprintf("127.0.0.%d", 2+i))
				}
				return stall(t, f, from, share+1, 8) // each address: its share stalls, one more is refused
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			f := start(t, release, withLimits(serving.Limits{MaxInFlight: inFlight, PerClientInFlight: share, ReadTimeout: 5 * time.Second}))
			released := sync.OnceFunc(func() { close(release) })
			defer released()
			stop := tt.attack(t, f)
			apiServer := f.httpClient(nil, "127.0.0.1")
			for i := range 3 * inFlight {
				if status, body, err := f.post(apiServer, "/validate", `{"kind":"AdmissionReview"}`, nil); err != nil || status != 200 {
					t.Fatalf("review %d from 127.0.0.1 while attacked: %d %q %v, want 200", i, status, body, err)
				}
			}
			if got := refused(t, f, "client-busy"); got != tt.refusedShare {
				t.Errorf("%v requests refused for their address's share, want %v", got, tt.refusedShare)
			}
			released()
			stop()
		})
	}
}

// holdInHandler sends n requests from the address from to /block and
// waits until each is held in the handler or refused.
func holdInHandler(t *testing.T, f *fixture, from string, n int) func() {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { _, _, _ = f.post(f.httpClient(nil, from), "/block", "", nil) })
	}
	inPlace(t, f, func() bool { return float64(f.blocked.Load())+refusals(t, f) == float64(n) })
	return wg.Wait
}

// stall starts n stalled clients from each address of from, and waits
// until the server refused refusals of them (the others are stalled in
// their bodies, which nothing counts: without any refusal, it waits
// settle).
func stall(t *testing.T, f *fixture, from []string, n int, want float64) func() {
	t.Helper()
	var crowds []*slowclient.Crowd
	for _, a := range from {
		crowds = append(crowds, slowclient.Start(f.addr, a, "/validate", n, 16))
	}
	inPlace(t, f, func() bool { return refusals(t, f) >= want })
	return func() {
		for _, c := range crowds {
			if errs := c.Wait(); len(errs) > 0 {
				t.Errorf("slow clients: %v", errs[0])
			}
		}
	}
}

// settle bounds the wait for the attackers: with a guard removed, what
// they hold may not show in the counters; the reviews then show it.
const settle = 2 * time.Second

// refusals counts the requests refused for the in-flight caps.
func refusals(t *testing.T, f *fixture) float64 {
	return refused(t, f, "client-busy") + refused(t, f, "busy")
}

func inPlace(t *testing.T, f *fixture, cond func() bool) {
	t.Helper()
	// Not reaching the condition within settle is not a failure here: the
	// assertions after say what the attackers achieved.
	_ = wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, settle, true,
		func(context.Context) (bool, error) { return cond(), nil })
	t.Logf("attackers in place: %v refused for their address's share, %v for the cap", refused(t, f, "client-busy"), refused(t, f, "busy"))
}
