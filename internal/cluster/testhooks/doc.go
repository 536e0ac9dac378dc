// Package testhooks holds the webhook's fault-injection flags, which only a
// test build of cmd/webhook has: cmd/webhook/testhooks.go, compiled with
// the build tag gpuadmit_testhooks, registers them, and
// internal/cluster/replicas builds its replicas with that tag and passes
// them (Args). The watch delay wraps the replica's client transport
// (DelayWatches: every event of the ledger's watches held back, a lagging
// replica; the only fault injection of the watches, the feed has none);
// the clock skew sets server.Options.Clock (a replica whose clock runs
// ahead), as a harness running the server in its own process does; the
// clock file (--test-clock-file) moves it further by the duration a file
// holds, re-read every 100 ms, so that a test advances the simulated time
// of every replica at once (the budgets' windows and checkpoints). The
// production binary has neither flag: nothing but the tagged file imports
// this package (hack/layering checks that cmd/webhook depends on nothing
// under internal/), and cmd/webhook's tests check that the flags are
// refused.
package testhooks
