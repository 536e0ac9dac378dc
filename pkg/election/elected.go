package election

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

// Elected runs Run on the one replica that holds the Lease Name,
// and only there. Losing the Lease (the API server unreachable past the
// renew deadline, another holder) stops the runnable and campaigns again:
// it never ends the process, and nothing else (admission, the ledger) ever
// depends on it. A stopping holder releases the Lease, so that another
// takes over at once.
type Elected struct {
	// Run is the work of the elected replica, until its ctx ends.
	Run func(ctx context.Context) error
	// Kube writes the Lease Namespace/Name as Identity.
	Kube      kubernetes.Interface
	Namespace string
	Name      string
	Identity  string
	Log       logr.Logger
}

var _ manager.LeaderElectionRunnable = (*Elected)(nil)

// NeedLeaderElection is false: the runnable elects itself, not the manager.
func (e *Elected) NeedLeaderElection() bool { return false }

// Start campaigns, runs while elected, and campaigns again until ctx ends.
func (e *Elected) Start(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
		Client:     e.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: e.Name, ReleaseOnCancel: true,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					if err := e.Run(ctx); err != nil {
						e.Log.Error(err, "elected work ended")
					}
				},
				OnStoppedLeading: func() { e.Log.Info("not elected any more; campaigning again", "lease", e.Name) },
			},
		})
		if err != nil {
			e.Log.Error(err, "leader election", "lease", e.Name)
			return
		}
		le.Run(ctx) // returns once the Lease is lost, or ctx ended
	}, time.Second)
	return nil
}

// Both runs a and b until ctx ends and both returned, and returns the
// first error (the elected replica's writers run side by side).
func Both(a, b func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return a(ctx) })
		g.Go(func() error { return b(ctx) })
		return g.Wait()
	}
}
