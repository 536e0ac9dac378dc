package seed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// Play runs the four scenarios and prints one line for each. Every figure
// printed is read from what the run produced (the example files' demand as
// gpuadmit computes it, the annotation the mutating webhook wrote, the
// ledger, kubectl's output), and each is checked against what the scenario
// must show: a mismatch is an error, never a printed line.
func Play(ctx context.Context, c *local.Cluster, examples string, out io.Writer) error {
	if err := c.SeedTeamA(ctx); err != nil {
		return err
	}
	quota, err := c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Limits.MemMiB != nil })
	if err != nil {
		return err
	}
	limit := quota.Limits.MemMiB.Value
	file := func(f string) string { return filepath.Join(examples, f) }
	s1, s2, s4 := file("scenario1-init30-app4.yaml"), file("scenario2-init20-app10.yaml"), file("scenario4-app12.yaml")
	oversize, err := demandOf(s1)
	if err != nil {
		return err
	}
	server, err := demandOf(s2)
	if err != nil {
		return err
	}
	small, err := demandOf(s4)
	if err != nil {
		return err
	}

	// 1: init 30 GiB + app 4 GiB against a 24 GiB quota.
	msg, err := apply(ctx, c, s1, false)
	if err != nil {
		return fmt.Errorf("scenario 1: %w", err)
	}
	if need := fmt.Sprintf("pod needs %d MiB", oversize.eff); !strings.Contains(msg, need) || oversize.eff <= limit {
		return fmt.Errorf("scenario 1: the denial %q does not say %q, or %d MiB fits the %d MiB limit", msg, need, oversize.eff, limit)
	}
	fmt.Fprintf(out, "scenario 1: denied %s (init %d MiB + app %d MiB): %s\n", oversize.name, oversize.init, oversize.app, msg)

	// 2: init 20 GiB, then app 10 GiB: needs 20 GiB, not 30.
	if _, err := apply(ctx, c, s2, true); err != nil {
		return fmt.Errorf("scenario 2: %w", err)
	}
	ann, _, err := c.Kubectl(ctx, nil, "get", "pod", "-n", local.TeamA, server.name, "-o", `jsonpath={.metadata.annotations.gpuadmit\.io/effective}`)
	if err != nil {
		return fmt.Errorf("scenario 2: reading the annotation: %w", err)
	}
	var annotated effective.Vector
	if err := json.Unmarshal([]byte(ann), &annotated); err != nil || annotated.MemMiB != server.eff || server.eff != max(server.init, server.app) {
		return fmt.Errorf("scenario 2: annotated %q (%v), computed max(%d, %d) = %d MiB", ann, err, server.app, server.init, server.eff)
	}
	fmt.Fprintf(out, "scenario 2: allowed %s (init %d MiB, then app %d MiB): effective demand max(%d, %d) = %d MiB, annotated gpuadmit.io/effective=%s\n",
		server.name, server.init, server.app, server.app, server.init, annotated.MemMiB, ann)

	// 3: the pod is bound and its init container runs: the ledger records the init peak.
	if err := c.Bind(ctx, local.TeamA, server.name, local.NodeName); err != nil {
		return err
	}
	if err := c.InitRunning(ctx, local.TeamA, server.name); err != nil {
		return err
	}
	s, err := c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Used.MemMiB == server.eff
	})
	if err != nil {
		return fmt.Errorf("scenario 3: %w", err)
	}
	denied, err := apply(ctx, c, s4, false)
	if err != nil {
		return fmt.Errorf("scenario 3: a %d MiB pod while the init runs: %w", small.eff, err)
	}
	fmt.Fprintf(out, "scenario 3: recorded %d MiB for %s while %s's init container %s runs on %s (not %d+%d = %d); a %d MiB pod is denied meanwhile: %s\n",
		s.Used.MemMiB, local.TeamA, server.name, server.initName, local.NodeName, server.init, server.app, server.init+server.app, small.eff, denied)

	// 4: the init container exits 0: the record shrinks to the app's demand.
	if err := c.InitsDone(ctx, local.TeamA, server.name); err != nil {
		return err
	}
	shrunk, err := c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.MemMiB == server.app })
	if err != nil {
		return fmt.Errorf("scenario 4: %w", err)
	}
	if _, err := apply(ctx, c, s4, true); err != nil {
		return fmt.Errorf("scenario 4: %w", err)
	}
	s, err = c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Pods == 2
	})
	if err != nil {
		return fmt.Errorf("scenario 4: %w", err)
	}
	if s.Used.MemMiB != shrunk.Used.MemMiB+small.eff || s.Used.MemMiB > limit {
		return fmt.Errorf("scenario 4: team-a uses %d MiB, want %d + %d within %d", s.Used.MemMiB, shrunk.Used.MemMiB, small.eff, limit)
	}
	fmt.Fprintf(out, "scenario 4: allowed %s (%d MiB) after %s exited 0: %s shrank to %d MiB, %s now uses %d of %d MiB\n",
		small.name, small.eff, server.initName, server.name, shrunk.Used.MemMiB, local.TeamA, s.Used.MemMiB, limit)
	return usageTable(ctx, c, fmt.Sprintf("%d/%d", s.Used.MemMiB, limit), out)
}

// usageTable prints what `kubectl get gpuusage -n team-a` shows once its
// GPUMEM column reads gpumem (the elected replica writes it within a
// second or two of a change).
func usageTable(ctx context.Context, c *local.Cluster, gpumem string, out io.Writer) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, _, err := c.Kubectl(ctx, nil, "get", "gpuusages.gpuadmit.io", "-n", local.TeamA, "-o", "jsonpath={.items[0].status.summary.gpumem}")
		if err == nil && got == gpumem {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kubectl get gpuusage -n %s: GPUMEM is %q after 10s, want %q (%v)", local.TeamA, got, gpumem, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	table, stderr, err := c.Kubectl(ctx, nil, "get", "gpuusage", "-n", local.TeamA)
	if err != nil {
		return fmt.Errorf("kubectl get gpuusage -n %s: %w: %s", local.TeamA, err, stderr)
	}
	fmt.Fprintf(out, "$ kubectl get gpuusage -n %s\n%s", local.TeamA, table)
	return nil
}

// podDemand is what gpuadmit computes for an example pod: its name, its
// first init container, and the memory of its init and app containers.
type podDemand struct {
	name, initName string
	init, app, eff int64
}

func demandOf(file string) (podDemand, error) {
	objs, err := manifest.ReadFile(file, nil)
	if err != nil {
		return podDemand{}, err
	}
	if len(objs.Pods) != 1 {
		return podDemand{}, fmt.Errorf("%s: want one Pod, found %d", file, len(objs.Pods))
	}
	pod := objs.Pods[0]
	d, err := effective.Compute(pod, effective.DefaultSettings(), effective.Options{})
	if err != nil {
		return podDemand{}, fmt.Errorf("%s: %w", file, err)
	}
	out := podDemand{name: pod.Name, eff: d.Effective.MemMiB}
	for _, c := range d.Containers {
		switch c.Role {
		case effective.RoleInit:
			if out.initName == "" {
				out.initName = c.Name
			}
			out.init = max(out.init, c.Total.MemMiB)
		default:
			out.app += c.Total.MemMiB
		}
	}
	return out, nil
}

// apply runs `kubectl apply -f file`. When allowed it must succeed; when not,
// it must be refused by the validating webhook, and the denial message is
// returned.
func apply(ctx context.Context, c *local.Cluster, file string, allowed bool) (string, error) {
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
