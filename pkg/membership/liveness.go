package membership

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// A replica that was paused (a long garbage-collection pause, a stopped
// or migrated VM, SIGSTOP) or cut off from the API server may have been
// given up by the others meanwhile: they stop waiting for a replica whose
// progress Lease has not changed for leaseDuration, and remove
// reservations its ledger may not have caught up with, and an
// administrator may even have deleted the drained GPUUsage object (and
// with it removedResourceVersion, the other guard). Such a replica proves,
// before its next decision in a namespace, that its ledger knows every pod
// a fresh read of the namespace lists (pkg/admitqueue's proof): a pod admitted
// and recorded by the others while it was away is then counted; until
// then it decides nothing there.
//
// The signs, on the monotonic clock (wall-clock jumps do not count):
//
//	heartbeat (every beatEvery) late by more than pauseAfter ──▶ suspect since the pause
//	no successful Lease renewal for staleAfter                ──▶ suspect since then
//	        ──per namespace: every pod a fresh list names is in the ledger──▶ trusted there
const (
	beatEvery  = 100 * time.Millisecond
	pauseAfter = time.Second
	// cutOffAfter: without a successful renewal this long the replica
	// stops being ready and refuses at once (it could not write a
	// reservation anyway); staleAfter: this long, and the others may soon
	// give it up, so it proves its view before deciding again.
	cutOffAfter = 3 * time.Second
	staleAfter  = leaseDuration / 2
)

// liveness holds the monotonic times of the last heartbeat and renewal.
type liveness struct {
	epoch     time.Time    // with its monotonic reading
	lastBeat  atomic.Int64 // since epoch; 0: not beating (not started)
	lastRenew atomic.Int64 // since epoch; 0: never
	pausedAt  atomic.Int64 // since epoch, of the last pause seen (0: none)
}

func (l *liveness) init() { l.epoch = time.Now() }

// Connected says why this replica cannot reach the API server (its Lease
// renewals have failed for a few seconds), or nil: it then stops being
// ready and refuses at once, since it could not write a reservation.
func (p *Members) Connected() error { return p.alive.connected() }

// SuspectSince is when this replica last became suspect (a pause, or
// renewals failing), on the monotonic clock; the zero time if never. A
// namespace proved after it may be decided in again.
func (p *Members) SuspectSince() time.Time {
	since := p.alive.suspectSince()
	if since == 0 {
		return time.Time{}
	}
	return p.alive.epoch.Add(time.Duration(since))
}

// Now is the monotonic time SuspectSince is compared with.
func (p *Members) Now() time.Time { return p.alive.epoch.Add(time.Duration(p.alive.now())) }

func (l *liveness) now() int64 { return int64(time.Since(l.epoch)) }

// beat notes the time every beatEvery until ctx ends, and marks a pause
// when a beat comes late.
func (l *liveness) beat(ctx context.Context, log logr.Logger) {
	l.lastBeat.Store(l.now())
	t := time.NewTicker(beatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := l.now()
		if gap := time.Duration(now - l.lastBeat.Swap(now)); gap > pauseAfter {
			l.pausedAt.Store(now)
			log.Info("this replica was paused; it proves its view of the pods before its next decision", "for", gap.Round(time.Millisecond))
		}
	}
}

func (l *liveness) renewed() { l.lastRenew.Store(l.now()) }

// connected says why the replica cannot reach the API server, or nil.
func (l *liveness) connected() error {
	last := l.lastRenew.Load()
	if last == 0 {
		return nil // not renewed yet: Announced says so
	}
	if since := time.Duration(l.now() - last); since > cutOffAfter {
		return fmt.Errorf("this replica has not reached the API server for %s (its progress Lease renewals fail)", since.Round(100*time.Millisecond))
	}
	return nil
}

// suspectSince is when the replica last became suspect (since epoch; 0:
// never): a pause seen by the heartbeat, a heartbeat late now (the beating
// goroutine may not have run since the pause), or renewals failing for
// staleAfter. A namespace proved after it is trusted again.
func (l *liveness) suspectSince() int64 {
	now := l.now()
	since := l.pausedAt.Load()
	if beat := l.lastBeat.Load(); beat != 0 && time.Duration(now-beat) > pauseAfter {
		since = max(since, beat+int64(pauseAfter))
	}
	if renew := l.lastRenew.Load(); renew != 0 && time.Duration(now-renew) > staleAfter {
		since = max(since, renew+int64(staleAfter))
	}
	return since
}
