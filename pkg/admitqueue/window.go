package admitqueue

import (
	"context"
	"slices"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// How long may a create that gpuadmit admitted still take to be stored?
// The API server calls every validating webhook at once and stores the pod
// only once all have answered (then the in-process validating admission
// plugins run, which take milliseconds): after gpuadmit's answer, the
// slowest other validating webhook that intercepts pod creates may still
// take up to its timeoutSeconds. A reservation whose pod nobody recorded is
// confirmed absent (its pod read by name) only after that window, plus a
// margin for the storage write and the watch: a read before could miss a
// create still in the chain and free its quota twice. Without other such
// webhooks the window is the margin alone, so a failed create (or a forged
// review) holds its reservation about two seconds.

// confirmMargin is added to the other webhooks' longest timeout.
const confirmMargin = 2 * time.Second

// defaultWebhookTimeout is the API server's default timeoutSeconds, and
// unknownWindow the window used while the webhook configurations cannot be
// read (the longest timeout the API server allows, 30 s, plus the margin).
const (
	defaultWebhookTimeout = 10 * time.Second
	unknownWindow         = 30*time.Second + confirmMargin
)

// confirmWindow is the window for the validating webhook configurations
// of the cluster, gpuadmit's own (named own) left out.
func confirmWindow(configs []admissionregistrationv1.ValidatingWebhookConfiguration, own string) time.Duration {
	var longest time.Duration
	for _, c := range configs {
		if c.Name == own {
			continue
		}
		for _, w := range c.Webhooks {
			if !interceptsPodCreate(w.Rules) {
				continue
			}
			t := defaultWebhookTimeout
			if w.TimeoutSeconds != nil {
				t = time.Duration(*w.TimeoutSeconds) * time.Second
			}
			longest = max(longest, t)
		}
	}
	return longest + confirmMargin
}

// interceptsPodCreate reports whether a webhook's rules may match the
// create of a pod (selectors and match conditions are not evaluated: a
// webhook that might run counts).
func interceptsPodCreate(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		ops := slices.ContainsFunc(r.Operations, func(o admissionregistrationv1.OperationType) bool {
			return o == admissionregistrationv1.Create || o == admissionregistrationv1.OperationAll
		})
		groups := slices.ContainsFunc(r.APIGroups, func(g string) bool { return g == "" || g == "*" })
		resources := slices.ContainsFunc(r.Resources, func(res string) bool { return res == "pods" || res == "*" || res == "*/*" })
		if ops && groups && resources {
			return true
		}
	}
	return false
}

// refreshWindow recomputes the window from the webhook configurations (the
// manager's cache; on a read error the longest possible), or takes
// Options.ConfirmAfter, and checks that a review can wait for it.
func (s *Store) refreshWindow(ctx context.Context) {
	w := s.opts.ConfirmAfter
	if w <= 0 {
		var list admissionregistrationv1.ValidatingWebhookConfigurationList
		w = unknownWindow
		if err := s.client.List(ctx, &list); err != nil {
			s.opts.Log.Error(err, "listing the validating webhook configurations; unconfirmed reservations are checked after the longest webhook timeout", "window", w)
		} else {
			w = confirmWindow(list.Items, s.opts.OwnWebhookConfiguration)
		}
	}
	if old := time.Duration(s.window.Swap(int64(w))); old != w {
		s.opts.Log.Info("unconfirmed reservations are checked this long after they were first seen", "window", w)
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

// confirmAfterLocked is how long after this replica first saw a
// reservation that nobody recorded its pod is first read:
// Options.ConfirmAfter, else the window derived from the webhook
// configurations; and never less than twice the slowest time this replica
// recently saw between a reservation and its pod's watch event
// (absence.slowest): on a loaded API server an admitted create can take
// longer to be stored than the configured window, and a read then finding
// no pod would end a reservation whose pod is about to exist. It is called
// with s.absence.mu held.
func (s *Store) confirmAfterLocked() time.Duration {
	slowest := s.absence.slowest
	w := unknownWindow
	switch {
	case s.opts.ConfirmAfter > 0:
		w = s.opts.ConfirmAfter
	case s.window.Load() > 0:
		w = time.Duration(s.window.Load())
	}
	return max(w, min(2*slowest, maxObservedWindow))
}

// maxObservedWindow bounds what observed latencies add to the window: the
// API server's default request timeout, past which no create is stored.
const maxObservedWindow = 60 * time.Second
