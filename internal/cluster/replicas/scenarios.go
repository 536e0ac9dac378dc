package replicas

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/internal/load/creates"
)

// QuickConfig is the replicas' configuration in the demo and the tests:
// reservations nobody recorded are checked after 1 s, so that they stay
// short.
const QuickConfig = `apiVersion: config.gpuadmit.io/v1alpha1
kind: Configuration
admission:
  reservations: {confirmAfter: 1s, recheckMax: 4s}
`

// Burst creates n 1 GiB pods in ns from clients goroutines; before create i
// (0-based, in the order they start) it calls before, when set.
func Burst(ctx context.Context, k kubernetes.Interface, ns string, n, clients int, before func(i int)) *creates.Tally {
	var tl creates.Tally
	creates.All(ctx, k, ns, "p", n, clients, 1024, &tl, before)
	return &tl
}

// Stream creates 1 GiB pods named prefix-NNNN in ns at rate a second until
// stop is called, which waits for the creates in flight; tl records each
// outcome.
func Stream(ctx context.Context, k kubernetes.Interface, ns, prefix string, rate int) (tl *creates.Tally, stop func()) {
	tl = &creates.Tally{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		var inflight sync.WaitGroup
		defer inflight.Wait()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			inflight.Go(func() {
				_, err := k.CoreV1().Pods(ns).Create(ctx, creates.GPUPod(ns, fmt.Sprintf("%s-%04d", prefix, i), "", 1024), metav1.CreateOptions{})
				tl.Record(err)
			})
		}
	})
	return tl, func() { close(done); wg.Wait() }
}

// RollingRestart restarts every replica in turn (SIGTERM: it fails
// readiness, drains and stops; then a new one starts and becomes ready)
// while 1 GiB pods are created in ns at rate a second. It returns the
// outcomes and how long the restart took.
func (c *Cluster) RollingRestart(ctx context.Context, k kubernetes.Interface, ns string, rate int) (*creates.Tally, time.Duration, error) {
	tl, stop := Stream(ctx, k, ns, "r", rate)
	start := time.Now()
	var err error
	for i := range c.Replicas {
		if err = c.Terminate(i); err != nil {
			break
		}
		if err = c.StartReplica(i); err != nil {
			break
		}
		if err = c.WaitReady(ctx, i); err != nil {
			break
		}
	}
	took := time.Since(start)
	stop()
	return tl, took, err
}

// FastClient is a client of the cluster without client-side rate limits,
// for bursts.
func (c *Cluster) FastClient() (kubernetes.Interface, error) {
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 5000, 5000
	return kubernetes.NewForConfig(cfg)
}

// Reserved is the number of reservations ns's GPUReservationSet holds.
func (c *Cluster) Reserved(ctx context.Context, ns string) (int, error) {
	out, _, err := c.Kubectl(ctx, nil, "get", "gpureservationsets.gpuadmit.io", "usage", "-n", ns, "--ignore-not-found",
		"-o", "jsonpath={.status.reservationCount}")
	if err != nil || out == "" {
		return 0, err
	}
	return strconv.Atoi(out)
}

// WaitDrained waits until ns's GPUReservationSet holds no reservation (every
// replica recorded every admitted pod) and returns how long that took.
func (c *Cluster) WaitDrained(ctx context.Context, ns string, within time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		n, err := c.Reserved(ctx, ns)
		if err == nil && n == 0 {
			return time.Since(start), nil
		}
		if time.Since(start) > within {
			if err != nil {
				return 0, fmt.Errorf("%s: %d reservations still held after %s (%w)", ns, n, within, err)
			}
			return 0, fmt.Errorf("%s: %d reservations still held after %s (<nil>)", ns, n, within)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
