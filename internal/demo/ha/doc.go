// Package ha plays the three scenarios of `make demo-ha` (cmd/demo-ha) on
// webhook replicas started by internal/cluster/replicas: a burst against a
// quota that fits 20, the same with a replica killed mid-burst, and a
// rolling restart under a stream of creates. It writes one line each with
// the figures it measured, and fails when an invariant does not hold.
package ha
