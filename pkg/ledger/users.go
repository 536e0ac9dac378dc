package ledger

import "github.com/gpuadmit/gpuadmit/pkg/effective"

// Each namespace keeps, beside its usage, the usage of each user its pods
// and claims are charged to (Options.Users), updated with the same charges
// and uncharges: a record's user is fixed when it is first recorded, so
// what a record added under a user is what its removal takes away.

// chargeUser adds u to user's usage in n (never overflows: it is part of
// n.used, which did not).
func (n *namespace) chargeUser(user string, u effective.Usage) {
	if u.IsZero() {
		return
	}
	if n.byUser == nil {
		n.byUser = map[string]effective.Usage{}
	}
	n.byUser[user], _ = n.byUser[user].Add(u)
}

// unchargeUserLocked subtracts u from user's usage in namespace ns (n).
func (l *Ledger) unchargeUserLocked(n *namespace, user string, u effective.Usage, ns string) {
	if u.IsZero() {
		return
	}
	left := l.nonNegativeUsage(n.byUser[user].Sub(u), "namespace "+ns+" user "+user)
	if left.IsZero() {
		delete(n.byUser, user)
		return
	}
	n.byUser[user] = left
}
