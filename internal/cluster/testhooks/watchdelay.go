package testhooks

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// The watch delay is the one place where a replica's watches are made to
// lag (the ledger's feed has no fault injection of its own): a wrapper of
// the replica's HTTP transport (rest.Config.Wrap) that hands the body of
// every watch of a kind the ledger is fed from (pods, nodes, resource
// quotas, namespaces, DRA's kinds) to the client d after the API server
// sent it, in order, the end of the stream included. The initial events
// of a watch list (sendInitialEvents) pass at once, up to the bookmark that
// ends them, so that "synced" still means that the ledger holds them; a
// plain list is never held back. The GPUUsage objects and everything else
// the replica reads pass at once.

// fedKinds are the paths of the cluster-wide watches that feed the ledger.
var fedKinds = []string{
	"/api/v1/pods", "/api/v1/nodes", "/api/v1/resourcequotas", "/api/v1/namespaces",
	"/apis/resource.k8s.io/",
}

// DelayWatches returns the transport wrapper that holds the ledger's
// watches back d, timed by clk.
func DelayWatches(d time.Duration, clk clock.Clock) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return &delayedWatches{next: next, d: d, clock: clk}
	}
}

type delayedWatches struct {
	next  http.RoundTripper
	d     time.Duration
	clock clock.Clock
}

func (t *delayedWatches) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK || !fedWatch(req) {
		return resp, err
	}
	resp.Body = newDelayedBody(resp.Body, t.d, t.clock, req.URL.Query().Get("sendInitialEvents") == "true")
	return resp, nil
}

// fedWatch reports whether req opens a watch that feeds the ledger.
func fedWatch(req *http.Request) bool {
	q := req.URL.Query()
	if req.Method != http.MethodGet || (q.Get("watch") != "true" && q.Get("watch") != "1") {
		return false
	}
	for _, k := range fedKinds {
		if req.URL.Path == k || (strings.HasSuffix(k, "/") && strings.HasPrefix(req.URL.Path, k)) {
			return true
		}
	}
	return false
}

// chunk is what one read of the API server's body returned, and when the
// client may have it.
type chunk struct {
	b   []byte
	err error
	at  time.Time
}

// delayedBody reads its body as it arrives and hands it on d later. Its
// reader ends when the body does or when it is closed.
type delayedBody struct {
	body   io.ReadCloser
	clock  clock.Clock
	chunks chan chunk
	done   chan struct{}
	close  sync.Once
	cur    []byte
	err    error
}

// initialEventsEnd marks the bookmark that ends a watch list's initial
// events.
var initialEventsEnd = []byte(metav1.InitialEventsAnnotationKey)

var errClosed = errors.New("delayed watch closed")

func newDelayedBody(body io.ReadCloser, d time.Duration, clk clock.Clock, initial bool) *delayedBody {
	b := &delayedBody{body: body, clock: clk, chunks: make(chan chunk, 1024), done: make(chan struct{})}
	go b.pump(d, initial)
	return b
}

// pump reads the body until it ends or is closed; while initial, until the
// bytes that end the initial events were read, chunks are due at once.
func (b *delayedBody) pump(d time.Duration, initial bool) {
	var tail []byte    // the end of what was read, for a marker split across reads
	var last time.Time // when the last bytes are due
	for {
		buf := make([]byte, 32<<10)
		n, err := b.body.Read(buf)
		c := chunk{b: buf[:n], err: err, at: b.clock.Now()}
		switch {
		case n == 0:
			c.at = last // the end of the stream comes right after its last bytes
		case initial:
			seen := slices.Concat(tail, c.b)
			initial = !bytes.Contains(seen, initialEventsEnd)
			tail = seen[max(0, len(seen)-len(initialEventsEnd)):]
		default:
			c.at = c.at.Add(d)
		}
		last = c.at
		select {
		case b.chunks <- c:
		case <-b.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (b *delayedBody) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		select {
		case c := <-b.chunks:
			if err := b.wait(c.at); err != nil {
				return 0, err
			}
			b.cur, b.err = c.b, c.err
		case <-b.done:
			return 0, errClosed
		}
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

// wait returns at t, or errClosed once the body is closed.
func (b *delayedBody) wait(t time.Time) error {
	d := t.Sub(b.clock.Now())
	if d <= 0 {
		return nil
	}
	timer := b.clock.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C():
		return nil
	case <-b.done:
		return errClosed
	}
}

// Close ends the stream and its reader.
func (b *delayedBody) Close() error {
	err := errClosed
	b.close.Do(func() {
		close(b.done)
		err = b.body.Close()
	})
	return err
}
