package testhooks

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// PprofFlag serves net/http/pprof on a loopback address of the test build
// (a benchmark profiles a replica's CPU per create).
const PprofFlag = "test-pprof-address"

// Pprof is the argument that serves a replica's profiles on addr.
func Pprof(addr string) string { return fmt.Sprintf("--%s=%s", PprofFlag, addr) }

// servePprof serves the profiles on addr, which must be a loopback
// address: they show the process's memory. A failure to listen is
// reported on stderr and leaves the replica running without them.
func servePprof(addr string) {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		fmt.Fprintf(os.Stderr, "--%s=%s: want a loopback address and port\n", PprofFlag, addr)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "--%s: %v\n", PprofFlag, err)
		}
	}()
}
