package budget

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

// LeaseName is the Lease the budgets' checkpointer is elected by.
const LeaseName = "gpuadmit-budgets"

// Recorder records Events about a budget (client-go's
// record.EventRecorder).
type Recorder interface {
	Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any)
}

// CheckpointerOptions configure a Checkpointer.
type CheckpointerOptions struct {
	Tracker *Tracker
	// Client writes the budgets' status subresource; Reader reads the
	// budgets from the API server (nil: Client) before each write.
	Client client.Client
	Reader client.Reader
	// Identity is the replica's, written as the checkpoint's writer.
	Identity string
	// Interval is budgets.checkpointInterval (0: 1m).
	Interval time.Duration
	// WarnPercents are budgets.warnPercents: an Event when a budget's use
	// first reaches each in a window.
	WarnPercents []int64
	// Recorder records the budgets' Events (nil: none).
	Recorder Recorder
	// Clock ticks the checkpoints (nil: the real clock).
	Clock clock.WithTicker
	Log   logr.Logger
}

// Checkpointer is the elected replica's writer of the budgets' status:
// every Interval, and at a window's end, each budget's use is recomputed
// from the checkpoint read and written with a compare-and-swap.
type Checkpointer struct {
	o CheckpointerOptions
}

// NewCheckpointer returns a Checkpointer; Run it under election
// (LeaseName).
func NewCheckpointer(o CheckpointerOptions) *Checkpointer {
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.Reader == nil {
		o.Reader = o.Client
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Log.GetSink() == nil {
		o.Log = logr.Discard()
	}
	return &Checkpointer{o: o}
}

// Run checkpoints every budget at once (resuming from their status), then
// every Interval and at each window's end, until ctx ends.
func (c *Checkpointer) Run(ctx context.Context) error {
	for {
		next := c.CheckpointAll(ctx)
		wait := c.o.Interval
		if d := next.Sub(c.o.Clock.Now()); !next.IsZero() && d < wait {
			wait = max(d, time.Millisecond)
		}
		timer := c.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C():
		}
	}
}

// CheckpointAll writes every budget's checkpoint now and returns the
// earliest end of their windows after now (zero: none).
func (c *Checkpointer) CheckpointAll(ctx context.Context) time.Time {
	var next time.Time
	for _, ref := range c.o.Tracker.Refs() {
		end, err := c.Checkpoint(ctx, ref)
		if err != nil {
			c.o.Log.Error(err, "budget checkpoint", "kind", ref.Kind, "namespace", ref.Namespace, "name", ref.Name)
			continue
		}
		if !end.IsZero() && (next.IsZero() || end.Before(next)) {
			next = end
		}
	}
	return next
}

// maxConflicts bounds the re-reads of one checkpoint.
const maxConflicts = 5

// Checkpoint writes ref's checkpoint: it reads the budget, recomputes its
// status from the checkpoint read and writes it carrying the
// resourceVersion read; a conflict re-reads and recomputes. It returns
// the end of the budget's window (zero for a rolling window).
func (c *Checkpointer) Checkpoint(ctx context.Context, ref Ref) (time.Time, error) {
	limit := MaxFoldedPods
	for range maxConflicts {
		obj, status, generation, err := c.read(ctx, ref)
		if apierrors.IsNotFound(err) {
			c.o.Tracker.forget(ref)
			return time.Time{}, nil
		}
		if err != nil {
			return time.Time{}, err
		}
		now := c.o.Clock.Now()
		next, st, dropped, ok := c.o.Tracker.fold(ref, status, generation, now, c.o.Identity)
		if !ok {
			return time.Time{}, nil
		}
		trimmed, fits := c.o.Tracker.trimFolded(next.Checkpoint, limit)
		if !fits {
			return time.Time{}, fmt.Errorf("%s %s: %w", ref.Kind, key(ref), errTooLarge)
		}
		prev := *status
		*status = next
		err = c.o.Client.Status().Update(ctx, obj)
		if apierrors.IsConflict(err) {
			continue
		}
		if tooLarge(err) && limit > 0 {
			// The status does not fit the API server (etcd's object
			// limit): write again with half the foldedPods entries,
			// dropping only those of pods not live (the deleted pods'
			// are released once written: never counted again).
			c.o.Log.Info("budget status too large; writing fewer foldedPods", "kind", ref.Kind, "budget", key(ref), "entries", len(next.Checkpoint.FoldedPods))
			limit = len(next.Checkpoint.FoldedPods) / 2
			continue
		}
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %s: status: %w", ref.Kind, key(ref), err)
		}
		c.o.Tracker.release(ref, now, trimmed, dropped)
		c.events(obj, &prev, st)
		if next.Window != "" && st.WindowEnd.After(st.WindowStart) && !isRolling(obj) {
			return st.WindowEnd, nil
		}
		return time.Time{}, nil
	}
	return time.Time{}, fmt.Errorf("%s %s: %w", ref.Kind, key(ref), errConflicts)
}

var (
	errConflicts = errors.New("status still conflicting after re-reads")
	errTooLarge  = errors.New("status too large for the API server even without the entries of pods not live; not written (the live pods keep counting here)")
)

// tooLarge reports an API error saying the object is too large to store.
func tooLarge(err error) bool {
	return err != nil && (apierrors.IsRequestEntityTooLargeError(err) ||
		strings.Contains(err.Error(), "request is too large"))
}

func key(ref Ref) string {
	if ref.Namespace == "" {
		return ref.Name
	}
	return ref.Namespace + "/" + ref.Name
}

// read gets ref's object from the API server.
func (c *Checkpointer) read(ctx context.Context, ref Ref) (client.Object, *gpuadmitv1.BudgetStatus, int64, error) {
	nn := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	if ref.Kind == KindClusterBudget {
		o := &gpuadmitv1.GPUClusterBudget{}
		if err := c.o.Reader.Get(ctx, nn, o); err != nil {
			return nil, nil, 0, fmt.Errorf("read %s %s: %w", ref.Kind, key(ref), err)
		}
		return o, &o.Status, o.Generation, nil
	}
	o := &gpuadmitv1.GPUBudget{}
	if err := c.o.Reader.Get(ctx, nn, o); err != nil {
		return nil, nil, 0, fmt.Errorf("read %s %s: %w", ref.Kind, key(ref), err)
	}
	return o, &o.Status, o.Generation, nil
}

func isRolling(obj client.Object) bool {
	switch o := obj.(type) {
	case *gpuadmitv1.GPUBudget:
		return o.Spec.Window.Rolling != nil
	case *gpuadmitv1.GPUClusterBudget:
		return o.Spec.Window.Rolling != nil
	}
	return false
}
