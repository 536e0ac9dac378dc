package testhooks

import (
	"flag"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// The flags' names, as Register defines them.
const (
	WatchDelayFlag = "test-watch-delay"
	ClockSkewFlag  = "test-clock-skew"
	// AnswerBeforeWriteFlag has the replica answer a pod's review allowed
	// before its reservation is written (a benchmark's ceiling; it admits
	// past the quota).
	AnswerBeforeWriteFlag = "test-answer-before-write"
)

// Tag is the build tag that compiles the flags into cmd/webhook.
const Tag = "gpuadmit_testhooks"

// Register defines the fault-injection flags on fs and returns what they
// set, once fs is parsed, on the server's options (the clock) and on its
// client configuration (the watch delay, watchdelay.go).
func Register(fs *flag.FlagSet) func(*server.Options, *rest.Config) {
	watchDelay := fs.Duration(WatchDelayFlag, 0, "fault injection for tests: hold every event of the ledger's watches back this long")
	clockSkew := fs.Duration(ClockSkewFlag, 0, "fault injection for tests: run this replica's clock this far ahead")
	clockFile := fs.String(ClockFileFlag, "", "simulated time for tests: run this replica's clock ahead by the duration this file holds (re-read every 100 ms)")
	pprofAddr := fs.String(PprofFlag, "", "benchmarks only: serve net/http/pprof on this loopback address")
	early := fs.Bool(AnswerBeforeWriteFlag, false, "benchmarks only: answer a pod's review allowed before its reservation is written (admits past the quota)")
	return func(o *server.Options, cfg *rest.Config) {
		o.AnswerBeforeWrite = *early
		if *pprofAddr != "" {
			servePprof(*pprofAddr)
		}
		if *watchDelay > 0 {
			cfg.Wrap(DelayWatches(*watchDelay, clock.RealClock{}))
		}
		if *clockSkew != 0 {
			o.Clock = skewed{by: *clockSkew}
		}
		if *clockFile != "" {
			var base clock.WithTicker = clock.RealClock{}
			if o.Clock != nil {
				base = o.Clock
			}
			o.Clock = NewFileClock(base, *clockFile)
		}
	}
}

// WatchDelay is the argument that holds a replica's watch events back d.
func WatchDelay(d time.Duration) string { return arg(WatchDelayFlag, d) }

// ClockSkew is the argument that runs a replica's clock d ahead.
func ClockSkew(d time.Duration) string { return arg(ClockSkewFlag, d) }

func arg(name string, d time.Duration) string { return fmt.Sprintf("--%s=%s", name, d) }

// skewed is the wall clock moved by its duration; its timers and tickers
// are the wall clock's (a wait is a duration, which skew does not change).
type skewed struct {
	clock.RealClock
	by time.Duration
}

var _ clock.WithTicker = skewed{}

func (s skewed) Now() time.Time { return time.Now().Add(s.by) }

func (s skewed) Since(t time.Time) time.Duration { return s.Now().Sub(t) }
