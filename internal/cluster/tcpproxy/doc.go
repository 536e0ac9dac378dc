// Package tcpproxy is a test-only TCP proxy on a loopback port, for fault
// injection: it forwards each connection to a backend chosen round-robin
// among the healthy ones (a Service in front of webhook replicas), and can
// stall every connection without closing it (a half-open network path),
// reset them all, or refuse new ones (a restarting peer). It never listens
// beyond 127.0.0.1.
package tcpproxy
