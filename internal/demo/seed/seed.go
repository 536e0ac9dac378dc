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

// nvidia is the name of the family the scenarios use.
const nvidia = effective.NvidiaName

// Play runs the four scenarios and prints one line for each. Every figure
// printed is read from what the run produced (the example files' demand as
// gpuadmit computes it, the annotation the mutating webhook wrote, the
// ledger, kubectl's output), and each is checked against what the scenario
// must show: a mismatch is an error, never a printed line.
func Play(ctx context.Context, c *local.Cluster, examples string, out io.Writer) error {
	if err := c.SeedTeamA(ctx); err != nil {
		return err
	}
	quota, err := c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Limits[nvidia].MemMiB != nil })
	if err != nil {
		return err
	}
	p, err := newPlay(c, examples, quota.Limits[nvidia].MemMiB.Value)
	if err != nil {
		return err
	}
	if err := p.scenario1(ctx, out); err != nil {
		return err
	}
	if err := p.scenario2(ctx, out); err != nil {
		return err
	}
	if err := p.scenario3(ctx, out); err != nil {
		return err
	}
	used, err := p.scenario4(ctx, out)
	if err != nil {
		return err
	}
	return usageTable(ctx, c, fmt.Sprintf("%d/%d", used, p.limit), out)
}

// play is what the scenarios share: the cluster, team-a's memory limit,
// and the example pods' files and demands.
type play struct {
	c     *local.Cluster
	limit int64
	// s1, s2 and s4 are the files of scenarios 1, 2 and 4 (3 applies s4
	// too); oversize, server and small their pods' demands.
	s1, s2, s4              string
	oversize, server, small podDemand
}

// newPlay reads the demands of the example pods in examples.
func newPlay(c *local.Cluster, examples string, limit int64) (*play, error) {
	file := func(f string) string { return filepath.Join(examples, f) }
	p := &play{c: c, limit: limit,
		s1: file("scenario1-init30-app4.yaml"), s2: file("scenario2-init20-app10.yaml"), s4: file("scenario4-app12.yaml")}
	var err error
	if p.oversize, err = demandOf(p.s1); err != nil {
		return nil, err
	}
	if p.server, err = demandOf(p.s2); err != nil {
		return nil, err
	}
	if p.small, err = demandOf(p.s4); err != nil {
		return nil, err
	}
	return p, nil
}

// scenario1: init 30 GiB + app 4 GiB against a 24 GiB quota.
func (p *play) scenario1(ctx context.Context, out io.Writer) error {
	oversize := p.oversize
	msg, err := apply(ctx, p.c, p.s1, false)
	if err != nil {
		return fmt.Errorf("scenario 1: %w", err)
	}
	if need := fmt.Sprintf("pod needs %d MiB", oversize.eff); !strings.Contains(msg, need) || oversize.eff <= p.limit {
		return fmt.Errorf("scenario 1: the denial %q does not say %q, or %d MiB fits the %d MiB limit", msg, need, oversize.eff, p.limit)
	}
	fmt.Fprintf(out, "scenario 1: denied %s (init %d MiB + app %d MiB): %s\n", oversize.name, oversize.init, oversize.app, msg)
	return nil
}

// scenario2: init 20 GiB, then app 10 GiB: needs 20 GiB, not 30.
func (p *play) scenario2(ctx context.Context, out io.Writer) error {
	server := p.server
	if _, err := apply(ctx, p.c, p.s2, true); err != nil {
		return fmt.Errorf("scenario 2: %w", err)
	}
	ann, _, err := p.c.Kubectl(ctx, nil, "get", "pod", "-n", local.TeamA, server.name, "-o", `jsonpath={.metadata.annotations.gpuadmit\.io/effective}`)
	if err != nil {
		return fmt.Errorf("scenario 2: reading the annotation: %w", err)
	}
	var annotated effective.Vector
	if err := json.Unmarshal([]byte(ann), &annotated); err != nil {
		return fmt.Errorf("scenario 2: annotated %q (%w), computed max(%d, %d) = %d MiB", ann, err, server.app, server.init, server.eff)
	}
	if annotated.MemMiB != server.eff || server.eff != max(server.init, server.app) {
		return fmt.Errorf("scenario 2: annotated %q (<nil>), computed max(%d, %d) = %d MiB", ann, server.app, server.init, server.eff)
	}
	fmt.Fprintf(out, "scenario 2: allowed %s (init %d MiB, then app %d MiB): effective demand max(%d, %d) = %d MiB, annotated gpuadmit.io/effective=%s\n",
		server.name, server.init, server.app, server.app, server.init, annotated.MemMiB, ann)
	return nil
}

// scenario3: the pod is bound and its init container runs: the ledger
// records the init peak.
func (p *play) scenario3(ctx context.Context, out io.Writer) error {
	server, small := p.server, p.small
	if err := p.c.Bind(ctx, local.TeamA, server.name, local.NodeName); err != nil {
		return err
	}
	if err := p.c.InitRunning(ctx, local.TeamA, server.name); err != nil {
		return err
	}
	s, err := p.c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Used.Of(nvidia).MemMiB == server.eff
	})
	if err != nil {
		return fmt.Errorf("scenario 3: %w", err)
	}
	denied, err := apply(ctx, p.c, p.s4, false)
	if err != nil {
		return fmt.Errorf("scenario 3: a %d MiB pod while the init runs: %w", small.eff, err)
	}
	fmt.Fprintf(out, "scenario 3: recorded %d MiB for %s while %s's init container %s runs on %s (not %d+%d = %d); a %d MiB pod is denied meanwhile: %s\n",
		s.Used.Of(nvidia).MemMiB, local.TeamA, server.name, server.initName, local.NodeName, server.init, server.app, server.init+server.app, small.eff, denied)
	return nil
}

// scenario4: the init container exits 0: the record shrinks to the app's
// demand, and the small pod fits beside it. It returns the MiB team-a uses
// then.
func (p *play) scenario4(ctx context.Context, out io.Writer) (int64, error) {
	server, small := p.server, p.small
	if err := p.c.InitsDone(ctx, local.TeamA, server.name); err != nil {
		return 0, err
	}
	shrunk, err := p.c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool { return s.Used.Of(nvidia).MemMiB == server.app })
	if err != nil {
		return 0, fmt.Errorf("scenario 4: %w", err)
	}
	if _, err := apply(ctx, p.c, p.s4, true); err != nil {
		return 0, fmt.Errorf("scenario 4: %w", err)
	}
	s, err := p.c.WaitLedger(ctx, local.TeamA, func(s ledger.NamespaceSnapshot) bool {
		return s.Reservations == 0 && s.Pods == 2
	})
	if err != nil {
		return 0, fmt.Errorf("scenario 4: %w", err)
	}
	if s.Used.Of(nvidia).MemMiB != shrunk.Used.Of(nvidia).MemMiB+small.eff || s.Used.Of(nvidia).MemMiB > p.limit {
		return 0, fmt.Errorf("scenario 4: team-a uses %d MiB, want %d + %d within %d", s.Used.Of(nvidia).MemMiB, shrunk.Used.Of(nvidia).MemMiB, small.eff, p.limit)
	}
	fmt.Fprintf(out, "scenario 4: allowed %s (%d MiB) after %s exited 0: %s shrank to %d MiB, %s now uses %d of %d MiB\n",
		small.name, small.eff, server.initName, server.name, shrunk.Used.Of(nvidia).MemMiB, local.TeamA, s.Used.Of(nvidia).MemMiB, p.limit)
	return s.Used.Of(nvidia).MemMiB, nil
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
			if err != nil {
				return fmt.Errorf("kubectl get gpuusage -n %s: GPUMEM is %q after 10s, want %q (%w)", local.TeamA, got, gpumem, err)
			}
			return fmt.Errorf("kubectl get gpuusage -n %s: GPUMEM is %q after 10s, want %q (<nil>)", local.TeamA, got, gpumem)
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
	d, err := effective.Compute(pod, effective.Nvidia(), effective.Options{})
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
