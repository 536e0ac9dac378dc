package slowclient

import (
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// Crowd is a set of stalled clients.
type Crowd struct {
	wg      sync.WaitGroup
	stalled chan struct{}
	mu      sync.Mutex
	errs    []error
}

// Start connects n clients from the loopback address from to addr (a
// host:port on loopback), each posting to path a request that announces
// body bytes and sends all but the last one. They share one payload, so
// the caller's own heap stays flat.
func Start(addr, from, path string, n, body int) *Crowd {
	payload := []byte(strings.Repeat("{", body-1))
	c := &Crowd{stalled: make(chan struct{})}
	for range n {
		c.wg.Go(func() {
			if err := c.one(addr, from, path, payload, body); err != nil {
				c.mu.Lock()
				c.errs = append(c.errs, err)
				c.mu.Unlock()
			}
		})
	}
	return c
}

func (c *Crowd) one(addr, from, path string, payload []byte, body int) error {
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}) //nolint:gosec // an attacker does not check
	if err != nil {
		return fmt.Errorf("slow client: %w", err)
	}
	defer conn.Close()
	go func() {
		_, _ = fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, body)
		_, _ = conn.Write(payload)
	}()
	answered := make(chan struct{})
	go func() { _, _ = conn.Read(make([]byte, 512)); close(answered) }()
	select {
	case <-answered:
	case <-c.stalled:
		<-answered // the server cuts every stalled client after its read timeout
	}
	return nil
}

// Wait lets the clients go on until the server answered or cut each one,
// and returns the errors of those that could not connect.
func (c *Crowd) Wait() []error {
	close(c.stalled)
	c.wg.Wait()
	return c.errs
}
