// Package seed plays the seed's four scenarios (an init container bigger
// than the quota; init and app containers that never run together; the
// ledger while the init container runs; the shrink when it exits 0) on a
// running local cluster (internal/cluster/local) through kubectl, and
// prints one line per scenario with figures it measured. `make demo`
// (cmd/demo) and tests/demo run it.
package seed
