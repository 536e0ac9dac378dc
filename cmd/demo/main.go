// Command demo plays the seed's four scenarios on a real, local control
// plane: kube-apiserver and etcd built from source (bin/k8s-*), gpuadmit's
// webhook server (the wiring of cmd/webhook) and the kubectl built from
// source. It prints one line per scenario and stops everything it started.
// `make demo` builds what it needs and runs it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/devcluster"
	"github.com/gpuadmit/gpuadmit/pkg/cache"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	assets := fs.String("assets", "", "directory with kube-apiserver, etcd and kubectl (make envtest-bins)")
	manifests := fs.String("manifests", "manifests/webhook", "the webhook kustomize base (webhooks.yaml is installed)")
	examples := fs.String("examples", "examples/pods", "the seed's example pods")
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
	c, err := devcluster.Start(ctx, *assets, *manifests)
	if err != nil {
		fmt.Fprintf(stderr, "demo: %v\n", err)
		return 1
	}
	opts := c.Options()
	opts.Log = log
	err = c.StartWebhook(ctx, opts)
	if err == nil {
		err = play(ctx, c, *examples, stdout)
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

// play runs the four scenarios and prints one line for each.
func play(ctx context.Context, c *devcluster.Cluster, examples string, out io.Writer) error {
	if err := c.SeedTeamA(ctx); err != nil {
		return err
	}
	if _, err := c.WaitLedger(ctx, devcluster.TeamA, func(s cache.NamespaceSnapshot) bool { return s.Limits.MemMiB != nil }); err != nil {
		return err
	}
	pod := func(f string) string { return filepath.Join(examples, f) }

	// 1: init 30 GiB + app 4 GiB against a 24 GiB quota.
	msg, err := apply(ctx, c, pod("scenario1-init30-app4.yaml"), false)
	if err != nil {
		return fmt.Errorf("scenario 1: %w", err)
	}
	fmt.Fprintf(out, "scenario 1: denied llm-oversize (init 30720 MiB + app 4096 MiB): %s\n", msg)

	// 2: init 20 GiB, then app 10 GiB: needs 20 GiB, not 30.
	if _, err := apply(ctx, c, pod("scenario2-init20-app10.yaml"), true); err != nil {
		return fmt.Errorf("scenario 2: %w", err)
	}
	ann, _, err := c.Kubectl(ctx, nil, "get", "pod", "-n", devcluster.TeamA, "llm-server", "-o", `jsonpath={.metadata.annotations.gpuadmit\.io/effective}`)
	if err != nil {
		return fmt.Errorf("scenario 2: reading the annotation: %w", err)
	}
	fmt.Fprintf(out, "scenario 2: allowed llm-server (init 20480 MiB, then app 10240 MiB): effective demand max(10240, 20480) = 20480 MiB, annotated gpuadmit.io/effective=%s\n", ann)

	// 3: the pod is bound and its init container runs: recorded 20 GiB.
	if err := c.Bind(ctx, devcluster.TeamA, "llm-server", devcluster.NodeName); err != nil {
		return err
	}
	if err := c.InitRunning(ctx, devcluster.TeamA, "llm-server"); err != nil {
		return err
	}
	s, err := c.WaitLedger(ctx, devcluster.TeamA, func(s cache.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Used.MemMiB == 20480
	})
	if err != nil {
		return fmt.Errorf("scenario 3: %w", err)
	}
	denied, err := apply(ctx, c, pod("scenario4-app12.yaml"), false)
	if err != nil {
		return fmt.Errorf("scenario 3: a 12 GiB pod while the init runs: %w", err)
	}
	fmt.Fprintf(out, "scenario 3: recorded %d MiB for team-a while llm-server's init container convert-weights runs on %s (not 20480+10240 = 30720); a 12288 MiB pod is denied meanwhile: %s\n",
		s.Used.MemMiB, devcluster.NodeName, denied)

	// 4: the init container exits 0: the record shrinks to the app's 10 GiB.
	if err := c.InitsDone(ctx, devcluster.TeamA, "llm-server"); err != nil {
		return err
	}
	if _, err := c.WaitLedger(ctx, devcluster.TeamA, func(s cache.NamespaceSnapshot) bool { return s.Used.MemMiB == 10240 }); err != nil {
		return fmt.Errorf("scenario 4: %w", err)
	}
	if _, err := apply(ctx, c, pod("scenario4-app12.yaml"), true); err != nil {
		return fmt.Errorf("scenario 4: %w", err)
	}
	s, err = c.WaitLedger(ctx, devcluster.TeamA, func(s cache.NamespaceSnapshot) bool { return s.Used.MemMiB+s.Reserved.MemMiB == 22528 })
	if err != nil {
		return fmt.Errorf("scenario 4: %w", err)
	}
	fmt.Fprintf(out, "scenario 4: allowed small-job (12288 MiB) after convert-weights exited 0: llm-server shrank to 10240 MiB, team-a now uses %d of 24576 MiB\n",
		s.Used.MemMiB+s.Reserved.MemMiB)
	return nil
}

// apply runs `kubectl apply -f file`. When allowed it must succeed; when not,
// it must be refused by the validating webhook, and the denial message is
// returned.
func apply(ctx context.Context, c *devcluster.Cluster, file string, allowed bool) (string, error) {
	stdout, stderr, err := c.Kubectl(ctx, nil, "apply", "-f", file)
	switch {
	case allowed && err != nil:
		return "", fmt.Errorf("kubectl apply -f %s was refused: %s", file, strings.TrimSpace(stderr))
	case allowed:
		return strings.TrimSpace(stdout), nil
	case err == nil:
		return "", fmt.Errorf("kubectl apply -f %s was allowed: %s", file, strings.TrimSpace(stdout))
	}
	const marker = "denied the request: "
	i := strings.Index(stderr, marker)
	if i < 0 {
		return "", fmt.Errorf("kubectl apply -f %s failed, not by the webhook: %s", file, strings.TrimSpace(stderr))
	}
	return strings.TrimSpace(stderr[i+len(marker):]), nil
}
