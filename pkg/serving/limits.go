package serving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"
)

// Limits bound what clients can make the server hold. The memory that
// request bodies take is at most BodyBudget (a review is decoded while its
// body's budget is held), and one client address holds at most
// PerClientBudget of it, so that requests from other addresses (the API
// server's) are still read at once while slow or oversized clients wait.
type Limits struct {
	// ReadTimeout: a request's header and body must arrive within it
	// (default 5s); a client that waits for body budget waits at most as
	// long.
	ReadTimeout time.Duration
	// WriteTimeout: from the request's header to the end of the answer
	// (default 15s; keep it above the handlers' own timeout).
	WriteTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long (default
	// 120s: longer than the API server's own idle timeout, 90s, so that the
	// client closes an idle connection first; a server that closes one
	// races a request the client may be sending on it, which then fails
	// with EOF and is not retried).
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds a request's header (default 64 KiB).
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request's body (default 7 MiB, as
	// controller-runtime's webhooks); a larger one gets 413 unread.
	MaxBodyBytes int64
	// BodyBudget bounds the bytes of the bodies read and being handled at
	// once (default 64 MiB); PerClientBudget the part one client address
	// may hold (default 16 MiB). A body is charged its Content-Length
	// (MaxBodyBytes when it has none) before it is read.
	BodyBudget, PerClientBudget int64
	// MaxInFlight bounds the requests being handled at once (default 1024);
	// beyond it a request gets 503 at once. A request takes its slot once
	// its body is read: a client that stalls in its body holds body budget
	// and a slot of its address (PerClientInFlight), never one of these.
	MaxInFlight int
	// PerClientInFlight bounds the requests of one client address being
	// read or handled at once (default a quarter of MaxInFlight); beyond it
	// the address's next request gets 503 at once. Connections that proved
	// who they are (the replicas' certificate, or any client while client
	// authentication is on) are not counted: an unauthenticated crowd from
	// one address leaves the other addresses (the API server's) at least
	// MaxInFlight less this share.
	PerClientInFlight int
}

func (l Limits) withDefaults() Limits {
	set := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&l.ReadTimeout, 5*time.Second)
	set(&l.WriteTimeout, 15*time.Second)
	set(&l.IdleTimeout, 120*time.Second)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = 64 << 10
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = 7 << 20
	}
	if l.BodyBudget <= 0 {
		l.BodyBudget = 64 << 20
	}
	if l.PerClientBudget <= 0 {
		l.PerClientBudget = min(16<<20, l.BodyBudget)
	}
	if l.MaxInFlight <= 0 {
		l.MaxInFlight = 1024
	}
	if l.PerClientInFlight <= 0 {
		l.PerClientInFlight = max(l.MaxInFlight/4, 1)
	}
	return l
}

// Reasons of gpuadmit_webhook_refused_total.
const (
	refusedClientCertificate = "client-certificate"
	refusedNotReplica        = "not-replica"
	refusedBusy              = "busy"
	refusedClientBusy        = "client-busy"
	refusedBodyBudget        = "body-budget"
	refusedTooLarge          = "too-large"
	refusedRead              = "read"
)

// bounded reads each request's body under the limits, then hands the
// request, its body in memory, to next. The client address's share is
// taken first and held to the end; a slot of MaxInFlight only once the
// body is read, so that stalled bodies (from any number of addresses) hold
// no handler slot.
func (s *Server) bounded(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authenticated(r) {
			client := clientAddress(r)
			if !s.slots.acquire(client) {
				s.refuse(w, http.StatusServiceUnavailable, refusedClientBusy,
					fmt.Sprintf("client %s has %d requests in flight, the limit of one address; try again", client, s.opts.Limits.PerClientInFlight))
				return
			}
			defer s.slots.release(client)
		}
		if h := s.opts.PeerHeader; h != "" && r.Header.Get(h) != "" && !s.FromReplica(r) {
			s.refuse(w, http.StatusForbidden, refusedNotReplica,
				fmt.Sprintf("the %s header is accepted only from a replica presenting the webhook's own certificate", h))
			return
		}
		release, status, reason, err := s.readBody(r)
		if err != nil {
			s.refuse(w, status, reason, err.Error())
			return
		}
		defer release()
		if !s.inflight.TryAcquire(1) {
			s.refuse(w, http.StatusServiceUnavailable, refusedBusy,
				fmt.Sprintf("the webhook server is handling %d requests, its limit; try again", s.opts.Limits.MaxInFlight))
			return
		}
		defer s.inflight.Release(1)
		next.ServeHTTP(w, r)
	})
}

// authenticated reports whether r's connection proved who sent it: the
// replicas' certificate, or, with client authentication on, the
// certificate the handshake required.
func (s *Server) authenticated(r *http.Request) bool {
	return s.FromReplica(r) || (r.TLS != nil && s.cas.get() != nil && len(r.TLS.PeerCertificates) > 0)
}

// readBody charges the body's size to the budgets, reads it, and replaces
// r.Body with what was read; release gives the budget back.
func (s *Server) readBody(r *http.Request) (release func(), status int, reason string, err error) {
	limit := s.opts.Limits.MaxBodyBytes
	n := r.ContentLength
	switch {
	case n > limit:
		return nil, http.StatusRequestEntityTooLarge, refusedTooLarge,
			fmt.Errorf("request body of %d bytes; the limit is %d bytes", n, limit)
	case n < 0:
		n = limit
	case n == 0:
		return func() {}, 0, "", nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Limits.ReadTimeout)
	defer cancel()
	client := clientAddress(r)
	cb, err := s.clients.acquire(ctx, client, n)
	if err != nil {
		return nil, http.StatusServiceUnavailable, refusedBodyBudget,
			fmt.Errorf("client %s is sending more request bodies at once than the webhook server reads (%d bytes); try again", client, s.opts.Limits.PerClientBudget)
	}
	if err := s.budget.Acquire(ctx, n); err != nil {
		s.clients.release(client, cb, n)
		return nil, http.StatusServiceUnavailable, refusedBodyBudget,
			fmt.Errorf("the webhook server is reading %d bytes of request bodies at once, its limit; try again", s.opts.Limits.BodyBudget)
	}
	body, err := readAll(r.Body, n, limit)
	s.clients.release(client, cb, n) // the client's share covers reading only
	if err != nil {
		s.budget.Release(n)
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, http.StatusRequestEntityTooLarge, refusedTooLarge, fmt.Errorf("request body over the limit of %d bytes", limit)
		}
		return nil, http.StatusBadRequest, refusedRead, fmt.Errorf("reading the request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	return func() { s.budget.Release(n) }, 0, "", nil
}

// readAll reads at most limit bytes, n of them expected. The buffer has
// bytes.MinRead to spare: with less, ReadFrom grows it (doubling) before
// its last read, and a body stalled one byte short would hold twice what
// it was charged.
func readAll(body io.Reader, n, limit int64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(n, limit)+bytes.MinRead))
	_, err := buf.ReadFrom(io.LimitReader(body, limit+1))
	if err == nil && int64(buf.Len()) > limit {
		err = &http.MaxBytesError{Limit: limit}
	}
	return buf.Bytes(), err
}

func (s *Server) refuse(w http.ResponseWriter, status int, reason, msg string) {
	s.refused.WithLabelValues(reason).Inc()
	if status != http.StatusForbidden {
		w.Header().Set("Connection", "close") // a refused body is not read: the connection cannot be reused
	}
	http.Error(w, "gpuadmit: "+msg, status)
}

// clientAddress is the host of the request's remote address.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// clientBudgets are the per-address shares of the body budget; an
// address's entry lives while one of its requests holds a share.
type clientBudgets struct {
	per int64
	mu  sync.Mutex
	m   map[string]*clientBudget
}

type clientBudget struct {
	sem   *semaphore.Weighted
	users int
}

func (c *clientBudgets) acquire(ctx context.Context, addr string, n int64) (*clientBudget, error) {
	c.mu.Lock()
	cb := c.m[addr]
	if cb == nil {
		cb = &clientBudget{sem: semaphore.NewWeighted(c.per)}
		c.m[addr] = cb
	}
	cb.users++
	c.mu.Unlock()
	if err := cb.sem.Acquire(ctx, n); err != nil {
		c.drop(addr, cb)
		return nil, err
	}
	return cb, nil
}

func (c *clientBudgets) release(addr string, cb *clientBudget, n int64) {
	cb.sem.Release(n)
	c.drop(addr, cb)
}

func (c *clientBudgets) drop(addr string, cb *clientBudget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cb.users--; cb.users == 0 && c.m[addr] == cb {
		delete(c.m, addr)
	}
}

// clientSlots counts each client address's requests in flight; an
// address's entry lives while it has one.
type clientSlots struct {
	per int
	mu  sync.Mutex
	m   map[string]int
}

// acquire takes a slot of addr, or reports that it holds its share.
func (c *clientSlots) acquire(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[addr] >= c.per {
		return false
	}
	c.m[addr]++
	return true
}

func (c *clientSlots) release(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[addr]--; c.m[addr] <= 0 {
		delete(c.m, addr)
	}
}
