package tcpproxy

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Backend is one destination of the proxy.
type Backend struct {
	// Addr is host:port.
	Addr string
	// Check reports whether the backend may take new connections (a
	// readiness probe); nil means "when it accepts a TCP connection".
	Check func() error
}

// Options configure a Proxy.
type Options struct {
	// Listen is the address to listen on (default 127.0.0.1:0, a free port).
	Listen   string
	Backends []Backend
	// HealthEvery is how often backends are checked (default 200ms).
	HealthEvery time.Duration
}

// Proxy is a running proxy.
type Proxy struct {
	ln       net.Listener
	opts     Options
	next     atomic.Uint64
	stalled  atomic.Bool
	pinned   atomic.Int64
	down     atomic.Bool
	refused  atomic.Int64
	accepted atomic.Int64

	mu      sync.Mutex
	healthy []bool
	fails   []int // consecutive failed checks
	conns   map[*pair]struct{}
	resume  chan struct{} // closed on Resume
	done    chan struct{}
	wg      sync.WaitGroup
}

type pair struct{ client, server net.Conn }

// New starts a proxy on 127.0.0.1 on a free port.
func New(opts Options) (*Proxy, error) {
	if len(opts.Backends) == 0 {
		return nil, errors.New("tcpproxy: no backend")
	}
	if opts.HealthEvery <= 0 {
		opts.HealthEvery = 200 * time.Millisecond
	}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("tcpproxy: %w", err)
	}
	p := &Proxy{ln: ln, opts: opts, healthy: make([]bool, len(opts.Backends)), fails: make([]int, len(opts.Backends)), conns: map[*pair]struct{}{},
		resume: make(chan struct{}), done: make(chan struct{})}
	close(p.resume)
	p.pinned.Store(-1)
	p.checkAll()
	p.wg.Add(2)
	go p.accept()
	go p.health()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted counts the connections accepted so far.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Refused counts the connections closed because no backend was healthy
// (or every one refused the dial).
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Stall stops copying bytes on every connection, open or new, without
// closing any: both peers see a silent, open connection.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled.CompareAndSwap(false, true) {
		p.resume = make(chan struct{})
	}
}

// Resume ends a stall: bytes held back flow again.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled.CompareAndSwap(true, false) {
		close(p.resume)
	}
}

// Reset closes every open connection (new ones are still accepted).
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, as a peer that vanished
		}
		_ = c.client.Close()
		_ = c.server.Close()
	}
}

// SetDown refuses (accepts and closes at once) new connections while down.
func (p *Proxy) SetDown(down bool) { p.down.Store(down) }

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	close(p.done)
	err := p.ln.Close()
	p.Resume()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		if p.down.Load() {
			_ = c.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// pick returns the next healthy backend, round-robin.
func (p *Proxy) pick() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.opts.Backends)
	if i := int(p.pinned.Load()); i >= 0 && i < n {
		return p.opts.Backends[i].Addr, p.healthy[i]
	}
	start := int(p.next.Add(1))
	for i := range n {
		j := (start + i) % n
		if p.healthy[j] {
			return p.opts.Backends[j].Addr, true
		}
	}
	return "", false
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	var server net.Conn
	for range len(p.opts.Backends) { // a backend that refuses is skipped: nothing was forwarded yet
		addr, ok := p.pick()
		if !ok {
			break
		}
		var err error
		if server, err = net.DialTimeout("tcp", addr, 2*time.Second); err == nil {
			break
		}
		p.markDown(addr)
	}
	if server == nil {
		p.refused.Add(1)
		_ = client.Close()
		return
	}
	c := &pair{client: client, server: server}
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	var both sync.WaitGroup
	both.Go(func() { p.copy(server, client) })
	both.Go(func() { p.copy(client, server) })
	both.Wait()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// copy forwards src to dst, holding bytes back while stalled.
func (p *Proxy) copy(dst, src net.Conn) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			resume := p.resume
			p.mu.Unlock()
			select {
			case <-resume:
			case <-p.done:
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // EOF or a closed connection: close both sides
			return
		}
	}
}

func (p *Proxy) health() {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.HealthEvery)
	defer t.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
			p.checkAll()
		}
	}
}

func (p *Proxy) checkAll() {
	for i, b := range p.opts.Backends {
		ok := check(b) == nil
		p.mu.Lock()
		if ok {
			p.fails[i], p.healthy[i] = 0, true
		} else if p.fails[i]++; p.fails[i] >= failureThreshold {
			p.healthy[i] = false
		}
		p.mu.Unlock()
	}
}

func check(b Backend) error {
	if b.Check != nil {
		return b.Check()
	}
	c, err := net.DialTimeout("tcp", b.Addr, time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}

// failureThreshold is how many checks in a row must fail before a backend
// leaves the rotation (a readiness probe's failureThreshold: one slow
// answer under load does not take a ready backend out). A refused dial
// takes it out at once.
const failureThreshold = 3

// markDown takes addr out of rotation until its next healthy check.
func (p *Proxy) markDown(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, b := range p.opts.Backends {
		if b.Addr == addr {
			p.healthy[i], p.fails[i] = false, failureThreshold
		}
	}
}

// Pin sends every new connection to backend i (-1: round-robin again).
func (p *Proxy) Pin(i int) { p.pinned.Store(int64(i)) }

// Healthy reports which backends the last check found healthy.
func (p *Proxy) Healthy() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.healthy...)
}
