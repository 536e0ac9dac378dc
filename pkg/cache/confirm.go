package cache

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ConfirmerOptions tune a Confirmer.
type ConfirmerOptions struct {
	// Every is how often due reservations are checked (default 1s).
	Every time.Duration
	// PerTick bounds the reads of one check (default 20): at most PerTick
	// reads every Every, whatever the number of reservations.
	PerTick int
	// Timeout bounds one read (default 2s).
	Timeout time.Duration
	Log     logr.Logger
}

// Confirmer ends the reservations whose pod the API server confirms does
// not exist: a create gpuadmit admitted that failed later in the admission
// chain (a native ResourceQuota, another webhook, AlreadyExists). Once a
// reservation is due (Options.ConfirmAfter after its admission, then with
// backoff), it reads the pod by name: not found, or found with another UID,
// ends the reservation; found with the reservation's UID (the watch lags)
// or a failed read keeps it. Nothing ends a reservation because time passed.
type Confirmer struct {
	ledger *Ledger
	read   func(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	opts   ConfirmerOptions
}

// NewConfirmer returns a Confirmer for l reading pods with client.
func NewConfirmer(l *Ledger, client kubernetes.Interface, opts ConfirmerOptions) *Confirmer {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.PerTick <= 0 {
		opts.PerTick = 20
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Confirmer{ledger: l, opts: opts, read: func(ctx context.Context, ns, name string) (*corev1.Pod, error) {
		return client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	}}
}

// Start checks due reservations every Every until ctx is done (a
// controller-runtime Runnable).
func (c *Confirmer) Start(ctx context.Context) error {
	t := time.NewTicker(c.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.Check(ctx)
		}
	}
}

// Check reads the pods of the due reservations (at most PerTick, in
// parallel) and ends those whose pod does not exist. It returns how many
// ended.
func (c *Confirmer) Check(ctx context.Context) int {
	due := c.ledger.DueReservations(c.opts.PerTick)
	var wg sync.WaitGroup
	ended := make(chan bool, len(due))
	for _, r := range due {
		wg.Go(func() { ended <- c.confirm(ctx, r) })
	}
	wg.Wait()
	close(ended)
	n := 0
	for e := range ended {
		if e {
			n++
		}
	}
	return n
}

func (c *Confirmer) confirm(ctx context.Context, r ReservationRef) bool {
	if r.Name == "" { // a review without a pod name (never from an API server): nothing to read
		return c.ledger.ConfirmAbsent(r.UID)
	}
	rctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	p, err := c.read(rctx, r.Namespace, r.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		c.opts.Log.V(1).Info("reservation kept: its pod could not be read", "pod", r.Namespace+"/"+r.Name, "age", r.Age, "error", err.Error())
		return false
	case p.UID != r.UID:
	default:
		return false // the pod exists: the watch has not recorded it yet
	}
	c.opts.Log.V(1).Info("reservation ended: the pod does not exist (its create failed after admission)",
		"pod", r.Namespace+"/"+r.Name, "uid", r.UID, "age", r.Age)
	return c.ledger.ConfirmAbsent(r.UID)
}
