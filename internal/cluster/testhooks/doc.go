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
// of every replica at once (the budgets' windows and checkpoints). Two
// flags serve benchmarks: --test-answer-before-write has the replica answer
// a pod's review allowed before its reservation is written (the ceiling row
// of BenchmarkCreateLatency; pkg/admitqueue compiles the early answer only
// into a test build), and --test-pprof-address serves net/http/pprof on a
// loopback address. The production binary has none of these flags: nothing but the tagged file imports
// this package (hack/layering checks that cmd/webhook depends on nothing
// under internal/), and cmd/webhook's tests check that the flags are
// refused.
package testhooks
