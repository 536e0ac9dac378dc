package absence

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

// ConfirmMargin is added to the other webhooks' longest timeout.
const ConfirmMargin = 2 * time.Second

// defaultWebhookTimeout is the API server's default timeoutSeconds, and
// UnknownWindow the window used while the webhook configurations cannot be
// read (the longest timeout the API server allows, 30 s, plus the margin).
const (
	defaultWebhookTimeout = 10 * time.Second
	UnknownWindow         = 30*time.Second + ConfirmMargin
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
	return longest + ConfirmMargin
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

// RefreshWindow recomputes the window from the webhook configurations (on
// a read error the longest possible), or takes Options.ConfirmAfter; it
// returns the window and whether it changed.
func (a *Confirmer) RefreshWindow(ctx context.Context) (time.Duration, bool) {
	w := a.opts.ConfirmAfter
	if w <= 0 {
		var list admissionregistrationv1.ValidatingWebhookConfigurationList
		w = UnknownWindow
		if err := a.configs.List(ctx, &list); err != nil {
			a.opts.Log.Error(err, "listing the validating webhook configurations; unconfirmed reservations are checked after the longest webhook timeout", "window", w)
		} else {
			w = confirmWindow(list.Items, a.opts.OwnWebhookConfiguration)
		}
	}
	if old := time.Duration(a.window.Swap(int64(w))); old != w {
		a.opts.Log.Info("unconfirmed reservations are checked this long after they were first seen", "window", w)
		return w, true
	}
	return w, false
}

// confirmAfterLocked is how long after this replica first saw a
// reservation that nobody recorded its pod is first read:
// Options.ConfirmAfter, else the window derived from the webhook
// configurations; and never less than twice the slowest time this replica
// recently saw between a reservation and its pod's watch event
// (slowest): on a loaded API server an admitted create can take longer to
// be stored than the configured window, and a read then finding no pod
// would end a reservation whose pod is about to exist. It is called with
// a.mu held.
func (a *Confirmer) confirmAfterLocked() time.Duration {
	w := UnknownWindow
	switch {
	case a.opts.ConfirmAfter > 0:
		w = a.opts.ConfirmAfter
	case a.window.Load() > 0:
		w = time.Duration(a.window.Load())
	}
	return max(w, min(2*a.slowest, maxObservedWindow))
}

// maxObservedWindow bounds what observed latencies add to the window: the
// API server's default request timeout, past which no create is stored.
const maxObservedWindow = 60 * time.Second
