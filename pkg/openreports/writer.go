package openreports

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Writer keeps one Report per namespace with a GPU limit in step with the
// ledger: created when the namespace gets a limit, rewritten when a
// result changes (at most once per MinGap), deleted when the namespace has
// no limit any more. It lists the Reports it owns (label
// app.kubernetes.io/managed-by=gpuadmit) when it starts and after any
// failed write, so that Reports deleted or edited by hand, or left by a
// previous holder of the Lease, are put right.
type Writer struct {
	// Client writes the Reports; Reader lists them from the API server
	// (not a cache: the CRD may be installed after gpuadmit).
	Client client.Client
	Reader client.Reader
	Ledger *ledger.Ledger
	// Reservations are those the namespaces' GPUReservationSets hold.
	Reservations reservation.Reader
	// Every is how often the ledger is compared with the Reports (default
	// 2s); MinGap the least time between two writes of one Report
	// (default 10s).
	Every, MinGap time.Duration
	// Namespace is gpuadmit's own, where the teams' GPUReservationSets
	// are ("": the teams' reservations are not read).
	Namespace string
	// Budgets are the GPU-hour budgets' standings (nil: no budget
	// results); NearPercent the lowest of budgets.warnPercents (a budget
	// at or past it is a warn result; 0: 80).
	Budgets     Budgets
	NearPercent int64
	Clock       clock.PassiveClock
	Log         logr.Logger

	known  map[string]*reportsv1alpha1.Report // by namespace; nil: list first
	listed time.Time
	last   map[string]time.Time
}

// resync is how often the owned Reports are listed again, so that a
// Report edited by hand is put right even when nothing changes.
const resync = time.Minute

// Start writes until ctx ends; the server runs it on the elected replica.
func (w *Writer) Start(ctx context.Context) error {
	w.setDefaults()
	w.Log.Info("elected: writing the OpenReports Reports")
	t := time.NewTicker(w.Every)
	defer t.Stop()
	for {
		if err := w.Round(ctx); err != nil {
			w.Log.Error(err, "writing the OpenReports Reports")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Round lists the owned Reports if it must, then creates, updates and
// deletes Reports until they say what the ledger says.
func (w *Writer) Round(ctx context.Context) error {
	w.setDefaults()
	now := w.Clock.Now()
	if w.known == nil || now.Sub(w.listed) >= resync {
		if err := w.list(ctx); err != nil {
			return err
		}
		w.listed = now
	}
	pending, err := w.Reservations.Reserved(ctx)
	if err != nil {
		return fmt.Errorf("listing the reservations: %w", err)
	}
	snap := w.Ledger.Snapshot(pending)
	teams, err := w.teamsByNamespace(ctx)
	if err != nil {
		return err
	}
	fams := w.Ledger.Families()
	var firstErr error
	for ns, n := range snap.Namespaces {
		extra := append(teamResults(ns, teams[ns], fams, now), budgetResults(ns, w.Budgets, w.NearPercent, now)...)
		want := desired(n, fams, extra, w.known[ns], now)
		if err := w.sync(ctx, ns, want, now); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for ns := range w.known {
		if _, ok := snap.Namespaces[ns]; !ok {
			if err := w.sync(ctx, ns, nil, now); err != nil && firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil {
		w.known = nil // list again: someone else changed them
	}
	return firstErr
}

func (w *Writer) setDefaults() {
	if w.Every <= 0 {
		w.Every = 2 * time.Second
	}
	if w.MinGap <= 0 {
		w.MinGap = 10 * time.Second
	}
	if w.Clock == nil {
		w.Clock = clock.RealClock{}
	}
	if w.last == nil {
		w.last = map[string]time.Time{}
	}
}

// list reads the Reports gpuadmit owns. It asks for the one name gpuadmit
// writes (a field selector), so that the chart's RBAC can limit every verb
// but create to that name (resourceNames): gpuadmit can neither read,
// change nor delete another tool's Reports.
func (w *Writer) list(ctx context.Context) error {
	var list reportsv1alpha1.ReportList
	if err := w.Reader.List(ctx, &list, client.MatchingLabels{ManagedBy: managedBy}, client.MatchingFields{"metadata.name": Name}); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("the OpenReports CRD (reports.openreports.io) is not installed; install it or turn audit.openReports off: %w", err)
		}
		return fmt.Errorf("listing the Reports: %w", err)
	}
	w.known = make(map[string]*reportsv1alpha1.Report, len(list.Items))
	for i := range list.Items {
		if r := &list.Items[i]; r.Name == Name {
			w.known[r.Namespace] = r
		}
	}
	return nil
}

// sync makes ns's Report want (nil: none).
func (w *Writer) sync(ctx context.Context, ns string, want *reportsv1alpha1.Report, now time.Time) error {
	have := w.known[ns]
	switch {
	case want == nil && have == nil:
		return nil
	case want == nil:
		if err := w.Client.Delete(ctx, have); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Report %s/%s: %w", ns, Name, err)
		}
		delete(w.known, ns)
		delete(w.last, ns)
		return nil
	case have != nil && same(have, want):
		return nil
	case have != nil && now.Sub(w.last[ns]) < w.MinGap:
		return nil // written lately: the next round after the gap
	case have == nil:
		if err := w.create(ctx, want); err != nil {
			return err
		}
	default:
		want.ResourceVersion = have.ResourceVersion
		if err := w.Client.Update(ctx, want); err != nil {
			return fmt.Errorf("updating Report %s/%s: %w", ns, Name, err)
		}
	}
	w.known[ns], w.last[ns] = want, now
	return nil
}

// create creates want; a Report of that name made by someone else
// (without gpuadmit's label, so not listed) is taken over.
func (w *Writer) create(ctx context.Context, want *reportsv1alpha1.Report) error {
	err := w.Client.Create(ctx, want)
	if !apierrors.IsAlreadyExists(err) {
		if err != nil {
			return fmt.Errorf("creating Report %s/%s: %w", want.Namespace, Name, err)
		}
		return nil
	}
	var have reportsv1alpha1.Report
	if err := w.Reader.Get(ctx, client.ObjectKeyFromObject(want), &have); err != nil {
		return fmt.Errorf("reading Report %s/%s, which exists: %w", want.Namespace, Name, err)
	}
	want.ResourceVersion = have.ResourceVersion
	if err := w.Client.Update(ctx, want); err != nil {
		return fmt.Errorf("taking over Report %s/%s: %w", want.Namespace, Name, err)
	}
	return nil
}
