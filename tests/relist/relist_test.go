package relist_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/envtestgate"
	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/podwire"
)

// size reads a count from the environment.
func size(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// BenchmarkRelist: cold start to synced and deciding, JSON against
// protobuf, on one filled API server (see the package doc). Metrics per
// encoding: seconds from exec to the decision, seconds to synced (from the
// child's start), RSS and peak RSS at the decision.
func BenchmarkRelist(b *testing.B) {
	assets := envtestgate.Assets(b)
	pods, nodes := size(b, "GPUADMIT_RELIST_PODS", 2000), size(b, "GPUADMIT_RELIST_NODES", 100)
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := env.Stop(); err != nil {
			b.Error(err)
		}
	})
	kubeconfig := filepath.Join(b.TempDir(), "kubeconfig")
	if err := local.WriteAdminKubeconfig(env, kubeconfig); err != nil {
		b.Fatal(err)
	}
	fill := podwire.ProtobufConfig(cfg)
	fill.QPS, fill.Burst = 1e6, 1e6
	kube, err := kubernetes.NewForConfig(fill)
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := populate(ctx, kube, pods, nodes, 32, func(s string) { say("filling: %s (%s)", s, time.Since(began).Round(time.Second)) }); err != nil {
		b.Fatal(err)
	}
	say("filled: %d pods, %d nodes, %d namespaces in %s", pods, nodes, namespaces, time.Since(began).Round(time.Second))
	type sum struct{ wall, synced, cpu, rss, peak float64 }
	sums := map[string]*sum{}
	runs := 0
	for b.Loop() {
		runs++
		order := variants(os.Getenv(variantsEnv), os.Getenv(baseEnv))
		if runs%2 == 0 { // no variant always meets the API server first
			slices.Reverse(order)
		}
		for _, v := range order {
			wall, res := child(b, kubeconfig, v, runs)
			if want := (pods + 4) / 5; res.GPUPods != want {
				b.Fatalf("%s: the ledger recorded %d GPU pods, want %d", v.name, res.GPUPods, want)
			}
			media := "application/vnd.kubernetes.protobuf"
			if v.encoding == "json" {
				media = "application/json"
			}
			if res.ContentTypes[media] == 0 {
				b.Fatalf("%s: no response in %s: %v", v.name, media, res.ContentTypes)
			}
			if sums[v.name] == nil {
				sums[v.name] = &sum{}
			}
			s := sums[v.name]
			s.wall += wall.Seconds()
			s.synced += float64(res.SyncedMs) / 1000
			s.cpu += res.CPUSeconds
			s.rss += float64(res.RSSMiB)
			s.peak += float64(res.PeakRSSMiB)
			say("%-17s %d pods, %d nodes: decided %.2f s after exec (synced %.2f s after start; %.2f s of CPU), RSS %d MiB (anonymous %d), peak %d MiB, heap %d MiB, responses %v",
				v.name, pods, nodes, wall.Seconds(), float64(res.SyncedMs)/1000, res.CPUSeconds, res.RSSMiB, res.AnonMiB, res.PeakRSSMiB, res.HeapMiB, res.ContentTypes)
		}
	}
	for name, s := range sums {
		n := float64(runs)
		b.ReportMetric(s.wall/n, "s-"+name)
		b.ReportMetric(s.synced/n, "synced-s-"+name)
		b.ReportMetric(s.cpu/n, "cpu-s-"+name)
		b.ReportMetric(s.rss/n, "rss-MiB-"+name)
		b.ReportMetric(s.peak/n, "peak-MiB-"+name)
	}
}

// variant is one way to start the child: its encoding and environment,
// and the test binary to run (os.Args[0] unless bin is set).
type variant struct {
	name, encoding, bin string
	env                 []string
}

// The parent's knobs for comparing builds and profiling, all optional:
// variantsEnv keeps only the named variants (comma-separated); baseEnv is
// another build of this test binary (go test -c), run as "base-<name>" next
// to every variant, on the same filled API server; profileDirEnv is a
// directory for each child's CPU and heap profiles (profileEnv).
const (
	variantsEnv   = "GPUADMIT_RELIST_VARIANTS"
	baseEnv       = "GPUADMIT_RELIST_BASE"
	profileDirEnv = "GPUADMIT_RELIST_PROFILE_DIR"
)

// variants: JSON, protobuf, protobuf under a Go memory limit (what a
// chart sets from the container's memory limit) and protobuf without gzip
// (the responses uncompressed), filtered by only
// (comma-separated names, "" all) and each repeated with the base build
// when base is set.
func variants(only, base string) []variant {
	all := []variant{
		{name: "json", encoding: "json"},
		{name: "protobuf", encoding: "protobuf"},
		{name: "protobuf-memlimit", encoding: "protobuf", env: []string{"GOMEMLIMIT=256MiB"}},
		{name: "protobuf-nogzip", encoding: "protobuf", env: []string{noGzipEnv + "=1"}},
	}
	var out []variant
	for _, v := range all {
		if only != "" && !slices.Contains(strings.Split(only, ","), v.name) {
			continue
		}
		out = append(out, v)
		if base != "" {
			b := v
			b.name, b.bin = "base-"+v.name, base
			out = append(out, b)
		}
	}
	return out
}

// say reports progress on stderr (a benchmark's log keeps only its first
// lines).
func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "relist: "+format+"\n", args...)
}

// child runs TestRelistChild in a new process (the run-th) and returns
// the time from exec to its result, and the result.
func child(b *testing.B, kubeconfig string, v variant, run int) (time.Duration, *coldStart) {
	b.Helper()
	bin := v.bin
	if bin == "" {
		bin = os.Args[0]
	}
	cmd := exec.Command(bin, "-test.run=^TestRelistChild$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), childEnv+"="+v.encoding, kubeconfigEnv+"="+kubeconfig), v.env...)
	if dir := os.Getenv(profileDirEnv); dir != "" {
		cmd.Env = append(cmd.Env, profileEnv+"="+filepath.Join(dir, fmt.Sprintf("%s-%d", v.name, run)))
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var res *coldStart
	var wall time.Duration
	var lines []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), resultPrefix)
		if !ok {
			lines = append(lines, sc.Text())
			continue
		}
		wall = time.Since(start)
		res = &coldStart{}
		if err := json.Unmarshal([]byte(line), res); err != nil {
			b.Fatal(err)
		}
	}
	if err := cmd.Wait(); err != nil || res == nil {
		b.Fatalf("%s child: %v; result %v; output:\n%s", v.name, err, res, strings.Join(lines, "\n"))
	}
	return wall, res
}
