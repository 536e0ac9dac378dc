package server

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// elected runs a runnable on the one replica that holds the Lease name,
// and only there. Losing the Lease (the API server unreachable past the
// renew deadline, another holder) stops the runnable and campaigns again:
// it never ends the process, and nothing else (admission, the ledger) ever
// depends on it. A stopping holder releases the Lease, so that another
// takes over at once.
type elected struct {
	run       func(ctx context.Context) error
	kube      kubernetes.Interface
	namespace string
	name      string
	identity  string
	log       logr.Logger
}

var _ manager.LeaderElectionRunnable = (*elected)(nil)

// NeedLeaderElection: the runnable elects itself; the manager does not.
func (e *elected) NeedLeaderElection() bool { return false }

// Start campaigns, runs while elected, and campaigns again until ctx ends.
func (e *elected) Start(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: e.name},
		Client:     e.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: e.name, ReleaseOnCancel: true,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					if err := e.run(ctx); err != nil {
						e.log.Error(err, "elected work ended")
					}
				},
				OnStoppedLeading: func() { e.log.Info("not elected any more; campaigning again", "lease", e.name) },
			},
		})
		if err != nil {
			e.log.Error(err, "leader election", "lease", e.name)
			return
		}
		le.Run(ctx) // returns once the Lease is lost, or ctx ended
	}, time.Second)
	return nil
}

// both runs a and b until ctx ends and both returned, and returns the
// first error (the elected replica's writers run side by side).
func both(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return a(ctx) })
		g.Go(func() error { return b(ctx) })
		return g.Wait()
	}
}
