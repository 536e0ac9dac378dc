package relist_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
	"github.com/gpuadmit/gpuadmit/policy"
)

// The child's environment: the encoding ("json" or "protobuf") and the
// kubeconfig of the filled API server.
const (
	childEnv      = "GPUADMIT_RELIST_CHILD"
	kubeconfigEnv = "GPUADMIT_RELIST_KUBECONFIG"
	resultPrefix  = "RELIST-RESULT "
	// profileEnv, when set, is the path prefix of the CPU profile (from the
	// child's start to its decision, <prefix>.cpu.pprof) and the heap
	// profile (at the decision, <prefix>.heap.pprof) the child writes.
	profileEnv = "GPUADMIT_RELIST_CHILD_PROFILE"
	// noGzipEnv=1 makes the child ask for uncompressed responses.
	noGzipEnv = "GPUADMIT_RELIST_NO_GZIP"
)

// coldStart is what the child reports, the moment it decided.
type coldStart struct {
	// SyncedMs and DecidedMs count from the start of TestRelistChild.
	SyncedMs  int64 `json:"syncedMs"`
	DecidedMs int64 `json:"decidedMs"`
	// RSS and peak RSS of the process (VmRSS, VmHWM), Go heap in use.
	RSSMiB     int64 `json:"rssMiB"`
	PeakRSSMiB int64 `json:"peakRssMiB"`
	HeapMiB    int64 `json:"heapMiB"`
	// AnonMiB is the anonymous part of RSS (the heap, stacks, the
	// runtime's own), the rest is mapped files (the binary's pages).
	AnonMiB int64 `json:"anonMiB"`
	// CPUSeconds is the process's user and system CPU time until then: its
	// share of the cold start, the API server's aside.
	CPUSeconds float64 `json:"cpuSeconds"`
	// GPUPods are the pods the ledger recorded; ContentTypes counts the API
	// server's responses by content type.
	GPUPods      int            `json:"gpuPods"`
	ContentTypes map[string]int `json:"contentTypes"`
}

// TestRelistChild is the measured process of BenchmarkRelist: it runs
// only when the benchmark starts it.
func TestRelistChild(t *testing.T) {
	enc := os.Getenv(childEnv)
	if enc == "" {
		t.Skip("started by BenchmarkRelist")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stop, err := startProfile(os.Getenv(profileEnv))
	if err != nil {
		t.Fatal(err)
	}
	res, err := start(ctx, os.Getenv(kubeconfigEnv), enc == "protobuf")
	if err := errors.Join(err, stop()); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(resultPrefix + string(out))
}

// start does what cmd/webhook does before it may decide, concurrently as
// it does: load the policies, list and watch into the ledger; then decides
// one GPU pod.
func start(ctx context.Context, kubeconfig string, protobuf bool) (*coldStart, error) {
	begin := time.Now()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	if protobuf {
		cfg = podwire.ProtobufConfig(cfg)
	} else {
		// client-go's generated clients prefer protobuf unless a content
		// type is set: ask for JSON explicitly.
		cfg.ContentType, cfg.AcceptContentTypes = kruntime.ContentTypeJSON, kruntime.ContentTypeJSON
	}
	cfg.DisableCompression = os.Getenv(noGzipEnv) == "1"
	types := &contentTypes{seen: map[string]int{}}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return types.wrap(rt) })
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	gpuadmit := config.Default()
	engine := policy.New(policy.Options{})
	loaded := make(chan error, 1)
	go func() { loaded <- engine.Load(ctx) }()
	l := ledger.New(ledger.Options{Families: []effective.Family{config.Settings(gpuadmit)}})
	feed, err := feed.NewFeed(kube, l, feed.Options{Freshness: feed.FreshnessOptions{ProbeEvery: -1}, PodConfig: cfg, ReleaseLists: true})
	if err != nil {
		return nil, err
	}
	feed.Start(ctx)
	for !feed.Synced() {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("not synced: %s", feed.NotSynced())
		case <-time.After(2 * time.Millisecond):
		}
	}
	res := &coldStart{SyncedMs: time.Since(begin).Milliseconds()}
	if err := <-loaded; err != nil {
		return nil, err
	}
	d, err := decision.New(engine, l, gpuadmit, logr.Discard())
	if err != nil {
		return nil, err
	}
	p := testpod.New("new").NS(nsName(0)).App("c", testpod.GPU(1), testpod.Mem(4096)).Build()
	if _, err := d.Decide(ctx, decision.Request{Pod: p}); err != nil {
		return nil, fmt.Errorf("deciding: %w", err)
	}
	res.DecidedMs = time.Since(begin).Milliseconds()
	res.RSSMiB, res.PeakRSSMiB = procStatusMiB("VmRSS:"), procStatusMiB("VmHWM:")
	res.AnonMiB = procStatusMiB("RssAnon:")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapMiB = int64(ms.HeapInuse >> 20)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		res.CPUSeconds = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	res.GPUPods = l.Stats().Pods
	res.ContentTypes = types.snapshot()
	return res, nil
}

// startProfile starts a CPU profile into prefix.cpu.pprof; the returned
// function stops it and writes the heap profile into prefix.heap.pprof
// (prefix "": no profile, nothing to stop).
func startProfile(prefix string) (func() error, error) {
	if prefix == "" {
		return func() error { return nil }, nil
	}
	cpu, err := os.Create(prefix + ".cpu.pprof")
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		return nil, errors.Join(fmt.Errorf("cpu profile: %w", err), cpu.Close())
	}
	return func() error {
		pprof.StopCPUProfile()
		runtime.GC() // the heap profile shows what is live now, not at the last cycle
		heap, err := os.Create(prefix + ".heap.pprof")
		if err != nil {
			return errors.Join(fmt.Errorf("heap profile: %w", err), cpu.Close())
		}
		return errors.Join(pprof.Lookup("heap").WriteTo(heap, 0), heap.Close(), cpu.Close())
	}, nil
}

// procStatusMiB reads a kB field of /proc/self/status in MiB (-1 when it
// cannot be read: not Linux).
func procStatusMiB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return -1
			}
			return kb >> 10
		}
	}
	return -1
}

// contentTypes counts responses by their media type (parameters dropped).
type contentTypes struct {
	mu   sync.Mutex
	seen map[string]int
}

type countingTransport struct {
	next http.RoundTripper
	c    *contentTypes
}

func (c *contentTypes) wrap(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{next: rt, c: c}
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err == nil {
		media, _, _ := strings.Cut(resp.Header.Get("Content-Type"), ";")
		t.c.mu.Lock()
		t.c.seen[media]++
		t.c.mu.Unlock()
	}
	return resp, err
}

func (c *contentTypes) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.seen)
}
