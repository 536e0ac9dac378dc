package admitqueue

import (
	"context"
	"time"
)

// refreshWindow has the absence confirmer recompute its window
// (pkg/absence) and, when it changed, checks that a review can wait for
// it.
func (s *Store) refreshWindow(ctx context.Context) {
	if w, changed := s.confirmer.RefreshWindow(ctx); changed {
		s.checkWait(w)
	}
}

// confirmSlack is what a waiting review needs past its blockers' due time:
// the read that confirms them absent and the write that reserves.
const confirmSlack = 2 * time.Second

// WaitCovers reports whether a review with reviewTimeout can wait for a
// reservation first seen as it arrived, confirmAfter later (need: the
// least reviewTimeout that can). A review that cannot is denied at once
// by a failed create's reservation, or a forged one, that holds the room
// it needs.
func WaitCovers(reviewTimeout, confirmAfter time.Duration) (need time.Duration, ok bool) {
	need = confirmAfter + waitMargin + confirmSlack
	return need, reviewTimeout >= need
}

// checkWait says loudly, with the fix, when Options.ReviewTimeout cannot
// cover confirmAfter; it reports whether it can (or nothing is known of
// the review timeout).
func (s *Store) checkWait(confirmAfter time.Duration) bool {
	if s.opts.ReviewTimeout <= 0 {
		return true
	}
	need, ok := WaitCovers(s.opts.ReviewTimeout, confirmAfter)
	if !ok {
		s.opts.Log.Error(nil, "a create denied only because of reservations whose pods never appeared (failed creates, or reviews forged by a client that reached the webhook port) "+
			"cannot wait for them to be confirmed absent: such a reservation denies every create that needs its room for confirmAfter. "+
			"Fix: raise admission.reviewTimeout to at least the need, and the webhooks' timeoutSeconds above it (at most 30s); "+
			"or lower the timeoutSeconds of the other validating webhooks on pod creates; and close the webhook port "+
			"(webhook.clientAuth, networkPolicy.apiServer.cidrs) so that reviews cannot be forged",
			"reviewTimeout", s.opts.ReviewTimeout, "confirmAfter", confirmAfter, "need", need)
	}
	return ok
}
