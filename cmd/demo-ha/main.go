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
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/internal/demo/ha"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo-ha", flag.ContinueOnError)
	fs.SetOutput(stderr)
	assets := fs.String("assets", "", "directory with kube-apiserver, etcd and kubectl (make envtest-bins)")
	manifests := fs.String("manifests", "manifests/webhook", "the webhook kustomize base (webhooks.yaml is installed)")
	webhook := fs.String("webhook", "", "the cmd/webhook binary (make demo-ha builds it)")
	keep := fs.Bool("keep", false, "keep the working directory (the replicas' logs) and print its path")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *assets == "" || *webhook == "" {
		fmt.Fprintln(stderr, "demo-ha: --assets and --webhook are required (make demo-ha sets them)")
		return 2
	}
	ctrllog.SetLogger(logr.Discard())
	klog.SetLogger(logr.Discard())
	dir, err := os.MkdirTemp("", "gpuadmit-demo-ha-")
	if err != nil {
		fmt.Fprintf(stderr, "demo-ha: %v\n", err)
		return 1
	}
	if *keep {
		fmt.Fprintf(stderr, ">> the replicas' logs are in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintln(stderr, ">> starting etcd, kube-apiserver and three webhook replicas behind a round-robin proxy")
	c, err := replicas.Start(ctx, replicas.Options{Assets: *assets, Manifests: *manifests, Binary: *webhook,
		Config: replicas.QuickConfig, Dir: dir})
	if err != nil {
		fmt.Fprintf(stderr, "demo-ha: %v\n", err)
		return 1
	}
	fmt.Fprintln(stderr, ">> a burst; a burst with a replica killed; a rolling restart under load (about a minute)")
	err = ha.Demo(ctx, c, stdout)
	if serr := c.Stop(); serr != nil {
		err = errors.Join(err, fmt.Errorf("stopping: %w", serr))
	}
	if err != nil {
		fmt.Fprintf(stderr, "demo-ha: %v\n", err)
		return 1
	}
	return 0
}
