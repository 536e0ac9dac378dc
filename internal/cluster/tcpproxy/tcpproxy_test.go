package tcpproxy

import (
	"bufio"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// echo starts a line echo server that prefixes its name.
func echo(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(name + ":" + line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, msg string, wait time.Duration) (string, error) {
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestProxy(t *testing.T) {
	a, b := echo(t, "a"), echo(t, "b")
	var bDown atomic.Bool
	p, err := New(Options{Backends: []Backend{{Addr: a}, {Addr: b, Check: func() error {
		if bDown.Load() {
			return errors.New("not ready")
		}
		return nil
	}}}, HealthEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seen := map[string]bool{}
	for range 4 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		got, err := roundTrip(c, "hi", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		seen[got] = true
		_ = c.Close()
	}
	if !seen["a:hi"] || !seen["b:hi"] {
		t.Fatalf("round robin reached %v", seen)
	}
	bDown.Store(true)
	time.Sleep(50 * time.Millisecond)
	for range 3 {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if got, err := roundTrip(c, "x", time.Second); err != nil || got != "a:x" {
			t.Fatalf("with b unhealthy: %q, %v", got, err)
		}
		_ = c.Close()
	}

	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	p.Stall()
	if got, err := roundTrip(c, "held", 200*time.Millisecond); err == nil {
		t.Fatalf("stalled, yet got %q", got)
	}
	p.Resume()
	_ = c.SetReadDeadline(time.Now().Add(time.Second))
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || strings.TrimSpace(line) != "a:held" {
		t.Fatalf("after resume: %q, %v", line, err)
	}
	p.Reset()
	if _, err := roundTrip(c, "after reset", time.Second); err == nil {
		t.Fatal("the connection survived a reset")
	}
	p.SetDown(true)
	c2, err := net.Dial("tcp", p.Addr())
	if err == nil {
		if _, err := roundTrip(c2, "down", 500*time.Millisecond); err == nil {
			t.Fatal("a down proxy forwarded")
		}
	}
}
