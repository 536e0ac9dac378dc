package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/internal/demo/seed"
	"github.com/gpuadmit/gpuadmit/internal/demo/workloads"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	assets := fs.String("assets", "", "directory with kube-apiserver, kube-controller-manager, etcd and kubectl (make envtest-bins)")
	manifests := fs.String("manifests", "manifests/webhook", "the webhook kustomize base (webhooks.yaml is installed)")
	examples := fs.String("examples", "examples/pods", "the seed's example pods")
	workloadExamples := fs.String("workloads", "examples/workloads", "the fifth scenario's example Deployments")
	verbose := fs.Bool("v", false, "log the webhook server to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *assets == "" {
		fmt.Fprintln(stderr, "demo: --assets is required (make demo sets it)")
		return 2
	}
	log := logr.Discard()
	if *verbose {
		log = textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(stderr)))
	}
	ctrllog.SetLogger(log)
	klog.SetLogger(log)
	fmt.Fprintln(stderr, ">> starting etcd, kube-apiserver and kube-controller-manager (built from source) on loopback ports")
	c, err := local.StartWith(ctx, local.Config{Assets: *assets, Manifests: *manifests, ControllerManager: true})
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	opts := c.Options()
	opts.Log = log
	fmt.Fprintln(stderr, ">> starting gpuadmit's webhook server and waiting until its watches synced")
	err = c.StartWebhook(ctx, opts)
	if err == nil {
		fmt.Fprintln(stderr, ">> playing the four scenarios through kubectl")
		err = seed.Play(ctx, c, *examples, stdout)
	}
	if err == nil {
		fmt.Fprintln(stderr, ">> the fifth: Deployments whose pods the real ReplicaSet controller creates")
		err = workloads.Play(ctx, c, *workloadExamples, stdout)
	}
	if serr := c.Stop(); serr != nil {
		err = errors.Join(err, fmt.Errorf("stopping: %w", serr))
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	return 0
}
