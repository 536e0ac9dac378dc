package testhooks_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// TestFlagsSetTheOptions: the arguments WatchDelay and ClockSkew write
// parse with the flags Register defines and set the server's options;
// without them, the options keep the real clock and no delay.
func TestFlagsSetTheOptions(t *testing.T) {
	parse := func(args ...string) server.Options {
		t.Helper()
		fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		apply := testhooks.Register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("parsing %q: %v", args, err)
		}
		var o server.Options
		apply(&o)
		return o
	}
	if o := parse(); o.WatchDelay != 0 || o.Clock != nil {
		t.Errorf("without the flags: WatchDelay %s, Clock %v; want 0 and nil (the real clock)", o.WatchDelay, o.Clock)
	}
	o := parse(testhooks.WatchDelay(15*time.Second), testhooks.ClockSkew(time.Hour))
	if o.WatchDelay != 15*time.Second {
		t.Errorf("WatchDelay = %s, want 15s", o.WatchDelay)
	}
	if o.Clock == nil {
		t.Fatal("no clock set by the skew")
	}
	if ahead := time.Until(o.Clock.Now()); ahead < 59*time.Minute || ahead > 61*time.Minute {
		t.Errorf("the skewed clock is %s ahead, want an hour", ahead)
	}
}
