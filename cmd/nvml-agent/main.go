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
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuadmit/gpuadmit/pkg/nodeagent"
	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// errUsage marks errors in the command line (exit status 2).
var errUsage = errors.New("usage")

type options struct {
	nodeName    string
	interval    time.Duration
	backend     string
	library     string
	kubeconfig  string
	waitForNVML bool
	once        bool
	print       bool
	verbosity   int
	version     bool
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("nvml-agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.nodeName, "node-name", getenv("NODE_NAME"), "name of this node's Node object (default $NODE_NAME, set from the downward API spec.nodeName)")
	fs.DurationVar(&o.interval, "interval", nodeagent.DefaultInterval, "time between two discoveries")
	fs.StringVar(&o.backend, "nvml", "real", "NVML backend: real, or mock:<system> with system one of "+mockSystems())
	fs.StringVar(&o.library, "nvml-library", "libnvidia-ml.so.1", "NVML library the real backend loads (a name on the library path, or a path)")
	fs.StringVar(&o.kubeconfig, "kubeconfig", getenv("KUBECONFIG"), "kubeconfig file; in-cluster configuration when empty")
	fs.BoolVar(&o.waitForNVML, "wait-for-nvml", false, "retry NVML initialisation with backoff instead of exiting when it fails")
	fs.BoolVar(&o.once, "once", false, "discover and sync once, then exit")
	fs.BoolVar(&o.print, "print", false, "with --once: print the annotation value on stdout instead of writing it (no API server needed)")
	fs.IntVar(&o.verbosity, "v", 0, "log verbosity")
	fs.BoolVar(&o.version, "version", false, "print the version and commit, and exit")
	if err := fs.Parse(args); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case o.version:
		return o, nil
	case o.print && !o.once:
		return o, fmt.Errorf("%w: --print needs --once", errUsage)
	case !o.print && o.nodeName == "":
		return o, fmt.Errorf("%w: --node-name (or $NODE_NAME) is required", errUsage)
	case o.interval <= 0:
		return o, fmt.Errorf("%w: --interval must be positive, got %s", errUsage, o.interval)
	}
	return o, nil
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "nvml-agent: %v\n", err)
		return 2
	}
	if o.version {
		fmt.Fprintln(stdout, versionLine())
		return 0
	}
	log := funcr.NewJSON(func(obj string) { fmt.Fprintln(stderr, obj) }, funcr.Options{LogTimestamp: true, Verbosity: o.verbosity})
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx = logr.NewContext(ctx, log)
	if err := agent(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "nvml-agent: %v\n", err)
		if errors.Is(err, errUsage) {
			return 2
		}
		return 1
	}
	return 0
}

// agent wires NVML discovery to the Node writer.
func agent(ctx context.Context, o options, stdout io.Writer) error {
	log := logr.FromContextOrDiscard(ctx)
	lib, err := newNVML(o.backend, o.library)
	if err != nil {
		return err
	}
	var disc *nvmldiscovery.Discoverer
	if o.waitForNVML {
		disc, err = nvmldiscovery.OpenWait(ctx, lib, nvmldiscovery.Backoff{Initial: time.Second, Max: time.Minute})
		if err != nil && ctx.Err() != nil {
			log.Info("stopped while waiting for NVML", "reason", context.Cause(ctx).Error())
			return nil
		}
	} else {
		disc, err = nvmldiscovery.Open(lib)
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := disc.Close(); err != nil {
			log.Error(err, "NVML shutdown")
		}
	}()
	driver, err := disc.DriverVersion()
	if err != nil {
		return err
	}
	log.Info("NVML ready", "backend", o.backend, "driverVersion", driver)

	a := &nodeagent.Agent{NodeName: o.nodeName, Source: disc, Interval: o.interval}
	if o.print {
		value, err := a.Value(ctx)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout, value)
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("kubernetes client configuration: %w", err)
	}
	cfg.UserAgent = nodeagent.FieldManager
	client, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kubernetes metadata client: %w", err)
	}
	a.Nodes = nodeagent.KubeNodes{Client: client}
	if o.once {
		_, err := a.Sync(ctx)
		return err
	}
	log.Info("syncing GPU devices", "node", o.nodeName, "interval", o.interval.String())
	return a.Run(ctx)
}
