package testhooks

import (
	"io"
	"net/http"
	"net/url"
	"runtime"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

// roundTripper answers every request with body.
type roundTripper struct{ body io.ReadCloser }

func (r roundTripper) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Body: r.body}, nil
}

// open opens rawURL through the delaying transport over a pipe: the
// returned writer is the API server's side.
func open(t *testing.T, clk *testclock.FakeClock, d time.Duration, rawURL string) (io.ReadCloser, *io.PipeWriter) {
	t.Helper()
	pr, pw := io.Pipe()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := DelayWatches(d, clk)(roundTripper{pr}).RoundTrip(&http.Request{Method: http.MethodGet, URL: u})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Body, pw
}

// reads reads body in the background, one result per Read.
func reads(body io.Reader) <-chan string {
	out := make(chan string, 16)
	go func() {
		defer close(out)
		for {
			buf := make([]byte, 64)
			n, err := body.Read(buf)
			if n > 0 {
				out <- string(buf[:n])
			}
			if err != nil {
				out <- "error: " + err.Error()
				return
			}
		}
	}()
	return out
}

// waitForTimer returns once the reader waits on the fake clock.
func waitForTimer(t *testing.T, clk *testclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the reader never waited on the clock")
		}
		runtime.Gosched()
	}
}

// TestWatchEventsHeldBack: an event of a fed watch reaches the client only
// once the clock passed its arrival plus the delay, and the end of the
// stream after it; the initial events of a watch list pass at once up to
// the bookmark that ends them.
func TestWatchEventsHeldBack(t *testing.T) {
	const d = time.Minute
	for _, tt := range []struct {
		name, url, first string
		firstHeld        bool
	}{
		{"a pod watch", "https://api/api/v1/pods?watch=true", "event-1", true},
		{"a watch list: the initial events pass", "https://api/api/v1/pods?watch=true&sendInitialEvents=true",
			"pod ... k8s.io/initial-events-end ...", false},
		{"a DRA watch", "https://api/apis/resource.k8s.io/v1/resourceclaims?watch=1", "event-1", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(time.Unix(1000, 0))
			body, server := open(t, clk, d, tt.url)
			got := reads(body)
			if _, err := server.Write([]byte(tt.first)); err != nil {
				t.Fatal(err)
			}
			if tt.firstHeld {
				waitForTimer(t, clk)
				select {
				case s := <-got:
					t.Fatalf("read %q before the delay passed", s)
				default:
				}
				clk.Step(d)
			}
			if s := <-got; s != tt.first {
				t.Fatalf("read %q, want %q", s, tt.first)
			}
			if _, err := server.Write([]byte("event-2")); err != nil {
				t.Fatal(err)
			}
			server.Close()
			waitForTimer(t, clk)
			clk.Step(d - time.Second)
			select {
			case s := <-got:
				t.Fatalf("read %q a second before the delay passed", s)
			default:
			}
			clk.Step(time.Second)
			if s := <-got; s != "event-2" {
				t.Fatalf("read %q, want event-2", s)
			}
			if s := <-got; s != "error: EOF" {
				t.Fatalf("after the last event: %q, want the end of the stream", s)
			}
		})
	}
}

// TestOtherRequestsPass: a list, and a watch of a kind the ledger is not
// fed from (GPUUsage), are not wrapped.
func TestOtherRequestsPass(t *testing.T) {
	for _, raw := range []string{"https://api/api/v1/pods?limit=500", "https://api/apis/gpuadmit.io/v1alpha1/gpuusages?watch=true",
		"https://api/api/v1/namespaces/ns/pods?watch=true"} {
		u, _ := url.Parse(raw)
		if fedWatch(&http.Request{Method: http.MethodGet, URL: u}) {
			t.Errorf("%s is held back", raw)
		}
	}
}

// TestCloseEndsTheReader: closing the body ends the goroutine that reads
// the API server's stream and a Read waiting for a held event.
func TestCloseEndsTheReader(t *testing.T) {
	clk := testclock.NewFakeClock(time.Unix(1000, 0))
	body, server := open(t, clk, time.Hour, "https://api/api/v1/nodes?watch=true")
	got := reads(body)
	if _, err := server.Write([]byte("event")); err != nil {
		t.Fatal(err)
	}
	waitForTimer(t, clk)
	if err := body.Close(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "error: "+errClosed.Error() {
		t.Fatalf("a Read after Close: %q", s)
	}
	if _, err := server.Write([]byte("more")); err == nil {
		t.Error("the API server's stream is still read after Close")
	}
}
