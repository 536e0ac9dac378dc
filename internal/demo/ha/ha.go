package ha

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/internal/cluster/replicas"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Demo plays the three scenarios of `make demo-ha` on a started
// replicas.Cluster and writes one line each with the figures it measured.
// It returns an error naming every line whose invariant does not hold (the
// line is written anyway: it tells what happened).
func Demo(ctx context.Context, c *replicas.Cluster, w io.Writer) error {
	k, err := c.FastClient()
	if err != nil {
		return err
	}
	d := &demo{c: c, k: k, w: w}
	if err := d.burst(ctx); err != nil {
		return err
	}
	if err := d.killed(ctx); err != nil {
		return err
	}
	if err := d.rolling(ctx); err != nil {
		return err
	}
	return errors.Join(d.failed...)
}

// demo is what the scenarios share: the cluster, a client without rate
// limits, where the lines go, and the invariants that did not hold.
type demo struct {
	c      *replicas.Cluster
	k      kubernetes.Interface
	w      io.Writer
	failed []error
}

// check records the error format and args make when ok is false.
func (d *demo) check(ok bool, format string, args ...any) {
	if !ok {
		d.failed = append(d.failed, fmt.Errorf(format, args...))
	}
}

// burst: 200 creates at once against a quota that fits 20.
func (d *demo) burst(ctx context.Context) error {
	if err := d.c.Seed(ctx, "ha-burst", fmt.Sprint(20*1024)); err != nil {
		return err
	}
	tl := replicas.Burst(ctx, d.k, "ha-burst", 200, 200, nil)
	live, err := d.c.Recount(ctx, "ha-burst")
	if err != nil {
		return err
	}
	failedCreates := tl.Unavailable.Load() + int64(len(tl.Other))
	fmt.Fprintf(d.w, "ha: %d replicas, 200 concurrent creates, quota for 20: %d admitted, %d denied, %d failed\n",
		len(d.c.Replicas), tl.Admitted.Load(), tl.Denied.Load(), failedCreates)
	d.check(tl.Admitted.Load() == 20 && live.Pods == 20 && failedCreates == 0,
		"burst: want exactly 20 admitted (20 live pods) and none failed; %s, %d live pods %q", tl, live.Pods, append(tl.Why, tl.Other...))
	return nil
}

// killed: the same with a replica killed (SIGKILL) once 60 creates
// started.
func (d *demo) killed(ctx context.Context) error {
	const clients = 16
	if err := d.c.Seed(ctx, "ha-killed", fmt.Sprint(20*1024)); err != nil {
		return err
	}
	var kill sync.Once
	var killErr error
	tl := replicas.Burst(ctx, d.k, "ha-killed", 200, clients, func(i int) {
		if i == 60 {
			kill.Do(func() { killErr = d.c.Kill(1) })
		}
	})
	if killErr != nil {
		return killErr
	}
	if err := d.c.StartReplica(1); err != nil {
		return err
	}
	if err := d.c.WaitReady(ctx, 1); err != nil {
		return err
	}
	live, err := d.c.Recount(ctx, "ha-killed")
	if err != nil {
		return err
	}
	over := max(0, live.Pods-20)
	fmt.Fprintf(d.w, "ha: replica killed during the burst: %d refused while it was unreachable, %d over the quota\n",
		tl.Unavailable.Load(), over)
	d.check(over == 0 && tl.Admitted.Load() <= 20 && tl.Unavailable.Load() <= clients && len(tl.Other) == 0,
		"kill: want none over the quota and at most the %d in-flight reviews refused; %s, %d live pods %q", clients, tl, live.Pods, tl.Other)
	return nil
}

// rolling: a rolling restart of every replica under a steady stream of
// creates.
func (d *demo) rolling(ctx context.Context) error {
	const rate, limit = 20, 1 << 20
	if err := d.c.Seed(ctx, "ha-rolling", fmt.Sprint(limit)); err != nil {
		return err
	}
	tl, took, err := d.c.RollingRestart(ctx, d.k, "ha-rolling", rate)
	if err != nil {
		return err
	}
	live, err := d.c.Recount(ctx, "ha-rolling")
	if err != nil {
		return err
	}
	fmt.Fprintf(d.w, "ha: rolling restart under %d creates/s: %d admitted, %d refused for unavailability (%s, %d replicas)\n",
		rate, tl.Admitted.Load(), tl.Unavailable.Load(), took.Round(100*time.Millisecond), len(d.c.Replicas))
	d.check(tl.Unavailable.Load() == 0 && len(tl.Other) == 0 && live.Used.Of(effective.Nvidia().Name).MemMiB <= limit && tl.Admitted.Load() > 0,
		"rolling restart: want none refused, none over the quota; %s %q %q", tl, tl.Why, tl.Other)
	return nil
}
