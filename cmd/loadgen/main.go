package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	assets := fs.String("assets", "", "directory with kube-apiserver, etcd and kubectl")
	manifests := fs.String("manifests", "manifests/webhook", "the webhook kustomize base")
	n := fs.Int("n", 20000, "reviews per handler")
	conc := fs.Int("c", 32, "concurrent connections")
	limit := fs.Duration("max", 60*time.Second, "stop a handler's run after this long")
	clientCPU := fs.Int("client-cpu", -1, "run the client as a separate process pinned to this CPU with taskset (-1: in this process)")
	client := fs.String("client", "", "client mode: post the reviews to this base URL (https://127.0.0.1:PORT) and print the results")
	cpuProfile := fs.String("cpuprofile", "", "write the server's CPU profile during the /validate-pods run to this file (with --client-cpu)")
	if err := fs.Parse(args); err != nil || (*assets == "" && *client == "") {
		fmt.Fprintln(stderr, "usage: loadgen --assets DIR [-n N] [-c C] [--max D] [--client-cpu CPU] | loadgen --client URL [-n N] [-c C] [--max D]")
		return 2
	}
	if *client != "" {
		return blastBoth(*client, true, *n, *conc, *limit, stdout, stderr)
	}
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	c, err := local.Start(ctx, *assets, *manifests)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	defer func() { _ = c.Stop() }()
	base, err := startWebhook(ctx, c)
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	if *clientCPU < 0 {
		return blastBoth(base, false, *n, *conc, *limit, stdout, stderr)
	}
	// The client in a process of its own, on its own CPU, so that it does not
	// take the server's (run the server under taskset -c on the other CPUs).
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	cmd := exec.CommandContext(ctx, "taskset", "-c", strconv.Itoa(*clientCPU), self, "--client", base,
		"-n", strconv.Itoa(*n), "-c", strconv.Itoa(*conc), "--max", limit.String())
	cmd.Stderr = stderr
	return runClient(cmd, *n, *cpuProfile, stdout, stderr)
}

// startWebhook seeds team-a and starts the webhook server on c with a
// /floor handler beside its own that allows every review, and returns the
// server's base URL.
func startWebhook(ctx context.Context, c *local.Cluster) (string, error) {
	if err := c.SeedTeamA(ctx); err != nil {
		return "", err
	}
	err := c.StartWebhookRun(ctx, local.WebhookRun{Options: c.Options(), Extra: map[string]http.Handler{
		"/floor": &admission.Webhook{Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
			return admission.Allowed("")
		})},
	}})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("https://127.0.0.1:%d", c.Port), nil
}

// runClient runs the client process cmd; with cpuProfile set, it writes
// this process's (the server's) CPU profile to that file meanwhile.
func runClient(cmd *exec.Cmd, n int, cpuProfile string, stdout, stderr io.Writer) int {
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "loadgen:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "loadgen: the client:", err)
		return 1
	}
	marks := serverCPU(out, stdout)
	if err := cmd.Wait(); err != nil {
		fmt.Fprintln(stderr, "loadgen: the client:", err)
		return 1
	}
	marks.perReview(stdout, "the server's process", n)
	return 0
}

// blastBoth measures the floor handler, then /validate-pods, and prints
// both and their ratio.
//
// client: this is the client process of --client-cpu; it prints marks
// for the server's process instead of measuring its own CPU.
func blastBoth(base string, client bool, n, conc int, limit time.Duration, stdout, stderr io.Writer) int {
	body, err := reviewBody()
	if err != nil {
		fmt.Fprintln(stderr, "loadgen:", err)
		return 1
	}
	m := &cpuMarks{}
	mark := m.mark
	if client {
		mark = func(name string) { fmt.Fprintln(stdout, markPrefix+name) }
	}
	mark("floor")
	floor := blast(base+"/floor", body, n, conc, limit)
	mark("validate")
	validate := blast(base+"/validate-pods", body, n, conc, limit)
	mark("end")
	for _, r := range []result{floor, validate} {
		fmt.Fprintf(stdout, "%-15s %6d reviews in %6.2fs: %8.0f reviews/s  p50 %7.3fms  p99 %7.3fms  errors %d\n",
			r.path, r.n, r.elapsed.Seconds(), float64(r.n)/r.elapsed.Seconds(), ms(r.p50), ms(r.p99), r.errors)
	}
	fmt.Fprintf(stdout, "validate/floor: throughput x%.2f, p50 x%.2f, p99 x%.2f\n",
		(float64(floor.n)/floor.elapsed.Seconds())/(float64(validate.n)/validate.elapsed.Seconds()),
		float64(validate.p50)/float64(floor.p50), float64(validate.p99)/float64(floor.p99))
	m.perReview(stdout, "this process: the server and the client", n)
	return 0
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type result struct {
	path      string
	n, errors int
	elapsed   time.Duration
	p50, p99  time.Duration
}

// blast posts body n times over conc keep-alive connections.
func blast(url string, body []byte, n, conc int, limit time.Duration) result {
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}, //nolint:gosec // loopback benchmark
		MaxIdleConnsPerHost: conc, ForceAttemptHTTP2: false,
	}, Timeout: 10 * time.Second}
	var next, errs atomic.Int64
	lat := make([][]time.Duration, conc)
	deadline := time.Now().Add(limit)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for next.Add(1) <= int64(n) && time.Now().Before(deadline) {
				t0 := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					errs.Add(1)
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := result{path: url[strings.LastIndex(url, "/"):], n: len(all), errors: int(errs.Load()), elapsed: time.Since(start)}
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	return r
}

// reviewBody is a dry-run CREATE review of the seed's scenario-2 pod.
func reviewBody() ([]byte, error) {
	res := func(m string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpumem": resource.MustParse(m)}}
	}
	pod := corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm-server", Namespace: local.TeamA, UID: "load"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "convert-weights", Image: "x", Resources: res("20480")}},
			Containers:     []corev1.Container{{Name: "server", Image: "x", Resources: res("10240")}},
		}}
	raw, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encoding the pod: %w", err)
	}
	dry := true
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: local.TeamA,
			Name: "llm-server", Operation: admissionv1.Create, DryRun: &dry, Object: runtime.RawExtension{Raw: raw}},
	})
}
