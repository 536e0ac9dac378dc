package feed

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// FreshnessOptions configure how a Feed decides that a watch is stale: it
// delivered nothing for longer than it should.
type FreshnessOptions struct {
	// ProbeEvery is how often the API server's current resourceVersion of
	// each watched resource is read (a list of at most one object); default
	// 15s, negative disables the check.
	ProbeEvery time.Duration
	// StaleAfter: a watch is stale when it has not caught up, StaleAfter
	// later, with a resourceVersion the API server reported, or when the
	// API server could not be read for that long. The API server sends every
	// watch a bookmark about once a minute, so a live watch of a quiet
	// resource catches up within that; default 3m.
	StaleAfter time.Duration
	// ProbeTimeout bounds one probe (default ProbeEvery, at most 5s).
	ProbeTimeout time.Duration
	// Clock tells the time and, when it is a clock.WithTicker, times the probes
	// (default the wall clock; a test steps a fake one).
	Clock clock.PassiveClock
}

// freshness tracks, per watched resource, whether the watch keeps up with
// the API server.
type freshness struct {
	opts FreshnessOptions
	log  logr.Logger
	// probe reads the API server's current resourceVersion of a resource;
	// watched returns the resourceVersion the resource's watch reached.
	probe   func(ctx context.Context, resource string) (string, error)
	watched func(resource string) string

	mu        sync.Mutex
	resources map[string]*watchState
	// summary is stale() as of the last probe, read without the lock.
	summary atomic.Pointer[string]
}

type watchState struct {
	probes       []rvAt // oldest first
	failingSince time.Time
	lastErr      error
	stale        string // why, "" when fresh
}

type rvAt struct {
	at time.Time
	rv string
}

// newFreshness checks the watches of watched, each a function returning how
// far its watch got.
func newFreshness(client kubernetes.Interface, opts FreshnessOptions, log logr.Logger, watched map[string]func() string) *freshness {
	if opts.ProbeEvery == 0 {
		opts.ProbeEvery = 15 * time.Second
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 3 * time.Minute
	}
	if opts.ProbeTimeout <= 0 {
		opts.ProbeTimeout = min(opts.ProbeEvery, 5*time.Second)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	f := &freshness{opts: opts, log: log, resources: map[string]*watchState{}}
	for name := range watched {
		f.resources[name] = &watchState{}
	}
	f.watched = func(resource string) string { return watched[resource]() }
	f.probe = func(ctx context.Context, resource string) (string, error) {
		lo := metav1.ListOptions{Limit: 1}
		var meta metav1.ListInterface
		var err error
		switch resource {
		case "pods":
			meta, err = client.CoreV1().Pods("").List(ctx, lo)
		case "nodes":
			meta, err = client.CoreV1().Nodes().List(ctx, lo)
		case "namespaces":
			meta, err = client.CoreV1().Namespaces().List(ctx, lo)
		case "resourceclaims":
			meta, err = client.ResourceV1().ResourceClaims("").List(ctx, lo)
		default:
			meta, err = client.CoreV1().ResourceQuotas("").List(ctx, lo)
		}
		if err != nil {
			return "", err
		}
		return meta.GetResourceVersion(), nil
	}
	return f
}

// run probes every ProbeEvery once synced reports true, until ctx is done.
func (f *freshness) run(ctx context.Context, synced func() bool) {
	if f.opts.ProbeEvery < 0 {
		return
	}
	ticks, ok := f.opts.Clock.(clock.WithTicker)
	if !ok { // a clock that only tells the time (a skewed one): real ticks
		ticks = clock.RealClock{}
	}
	t := ticks.NewTicker(f.opts.ProbeEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if synced() {
			f.check(ctx)
		}
	}
}

// check probes every resource once, in parallel, and re-evaluates their
// staleness.
func (f *freshness) check(ctx context.Context) {
	var wg sync.WaitGroup
	for name := range f.resources {
		wg.Go(func() {
			at := f.opts.Clock.Now()
			pctx, cancel := context.WithTimeout(ctx, f.opts.ProbeTimeout)
			rv, err := f.probe(pctx, name)
			cancel()
			f.record(name, at, rv, err, f.watched(name))
		})
	}
	wg.Wait()
}

// record adds the probe of resource started at now and re-evaluates its
// staleness against the resourceVersion its watch reached.
func (f *freshness) record(resource string, now time.Time, probed string, probeErr error, watched string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w := f.resources[resource]
	w.observe(now, probed, probeErr)
	judged := w.trim(now.Add(-f.opts.StaleAfter))
	stale := w.staleness(resource, now, watched, judged, f.opts.StaleAfter)
	f.logChange(resource, w.stale, stale)
	w.stale = stale
	sum := f.staleLocked()
	f.summary.Store(&sum)
}

// observe records the outcome of a probe started at now: since when the API
// server has been failing, or the resourceVersion it reported (when valid).
func (w *watchState) observe(now time.Time, probed string, probeErr error) {
	if probeErr != nil {
		if w.failingSince.IsZero() {
			w.failingSince = now
		}
		w.lastErr = probeErr
		return
	}
	w.failingSince, w.lastErr = time.Time{}, nil
	if resourceversion.Valid(probed) {
		w.probes = append(w.probes, rvAt{at: now, rv: probed})
	}
}

// trim keeps the newest probe old enough to judge by (taken at or before
// cut), and the younger ones. It reports whether there is one to judge by,
// then w.probes[0].
func (w *watchState) trim(cut time.Time) bool {
	judge := -1
	for i, p := range w.probes {
		if !p.at.After(cut) {
			judge = i
		}
	}
	if judge > 0 {
		w.probes = w.probes[judge:]
	}
	return judge >= 0
}

// staleness returns why the watch of resource is stale at now ("" when
// fresh): the API server has not answered for staleAfter, or the watch is
// behind the probe judged by (judged: w.probes[0]).
func (w *watchState) staleness(resource string, now time.Time, watched string, judged bool, staleAfter time.Duration) string {
	if !w.failingSince.IsZero() && now.Sub(w.failingSince) >= staleAfter {
		return fmt.Sprintf("%s: the API server has not answered for %s: %v", resource, now.Sub(w.failingSince).Round(time.Second), w.lastErr)
	}
	if resourceversion.Valid(watched) && judged && resourceversion.Newer(w.probes[0].rv, watched) {
		return fmt.Sprintf("%s: the watch is at resourceVersion %s, behind the %s the API server reported %s ago",
			resource, watched, w.probes[0].rv, now.Sub(w.probes[0].at).Round(time.Second))
	}
	return ""
}

// logChange logs a watch of resource turning stale or fresh again (before
// and after are its staleness reasons, "" when fresh).
func (f *freshness) logChange(resource, before, after string) {
	switch {
	case after != "" && before == "":
		f.log.Info("watch is stale: deletions and quota changes are not seen; admitted pods stay reserved until seen", "problem", after)
	case after == "" && before != "":
		f.log.Info("watch is fresh again", "resource", resource)
	}
}

// stale joins the reasons of the stale watches ("" when all are fresh).
func (f *freshness) stale() string {
	if s := f.summary.Load(); s != nil {
		return *s
	}
	return ""
}

func (f *freshness) staleLocked() string {
	var why []string
	for _, name := range slices.Sorted(maps.Keys(f.resources)) {
		if s := f.resources[name].stale; s != "" {
			why = append(why, s)
		}
	}
	return strings.Join(why, "; ")
}

func (f *freshness) perResource() map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]bool, len(f.resources))
	for name, w := range f.resources {
		out[name] = w.stale != ""
	}
	return out
}
