package ha_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
)

// profileEnv names a directory: with it set, BenchmarkCreateLatency takes
// CPU profiles of the API server (its /debug/pprof, on by default) and of
// the serving replicas (a test build's --test-pprof-address) over each
// run's creates, named after the run, for `go tool pprof`: where the CPU
// per create goes (webhook calls, TLS, the reservation writes, watches).
const profileEnv = "GPUADMIT_BENCH_APISERVER_PROFILE"

// profiled is what a run profiles: the API server and, by their pprof
// addresses (benchArgs), the serving replicas.
type profiled struct {
	k       kubernetes.Interface
	pprof   []string // by replica; empty: not profiled
	serving []int
}

// benchArgs are the replicas' flags for BenchmarkCreateLatency: skewed's,
// and with profileEnv set a pprof address each (the returned list).
func benchArgs(b *testing.B) (func(i int) []string, []string) {
	if os.Getenv(profileEnv) == "" {
		return skewed, nil
	}
	addrs := make([]string, 3)
	for i := range addrs {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		addrs[i] = l.Addr().String()
		_ = l.Close()
	}
	return func(i int) []string { return append(skewed(i), testhooks.Pprof(addrs[i])) }, addrs
}

// start profiles secs seconds of the API server and the serving replicas
// when profileEnv is set; the returned function waits for the profiles
// and writes them, named after the run (a failure fails b: they were
// asked for).
func (p profiled) start(b *testing.B, secs string) func() {
	dir := os.Getenv(profileEnv)
	if dir == "" {
		return func() {}
	}
	base := strings.NewReplacer("/", "_", ",", "_", "=", "-").Replace(b.Name())
	done := make(chan error, 1+len(p.serving))
	go func() {
		raw, err := p.k.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", secs).DoRaw(context.Background())
		done <- write(filepath.Join(dir, base+".apiserver.pprof"), raw, err)
	}()
	for _, i := range p.serving {
		go func() {
			raw, err := get("http://" + p.pprof[i] + "/debug/pprof/profile?seconds=" + secs)
			done <- write(filepath.Join(dir, fmt.Sprintf("%s.replica%d.pprof", base, i)), raw, err)
		}()
	}
	return func() {
		for range 1 + len(p.serving) {
			if err := <-done; err != nil {
				b.Fatalf("profiling: %v", err)
			}
		}
	}
}

func write(path string, raw []byte, err error) error {
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

func get(url string) ([]byte, error) {
	resp, err := http.Get(url) //nolint:noctx // a loopback profile the benchmark waits for
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
