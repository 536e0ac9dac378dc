package testhooks_test

import (
	"flag"
	"io"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
	"github.com/gpuadmit/gpuadmit/pkg/server"
)

// TestFlagsSetTheOptions: the arguments WatchDelay and ClockSkew write
// parse with the flags Register defines and set the server's options and
// client configuration; without them, the options keep the real clock and
// the transport is not wrapped.
func TestFlagsSetTheOptions(t *testing.T) {
	parse := func(args ...string) (server.Options, *rest.Config) {
		t.Helper()
		fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		apply := testhooks.Register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("parsing %q: %v", args, err)
		}
		var o server.Options
		cfg := &rest.Config{}
		apply(&o, cfg)
		return o, cfg
	}
	if o, cfg := parse(); cfg.WrapTransport != nil || o.Clock != nil {
		t.Errorf("without the flags: transport wrapped %v, Clock %v; want neither (the real clock)", cfg.WrapTransport != nil, o.Clock)
	}
	o, cfg := parse(testhooks.WatchDelay(15*time.Second), testhooks.ClockSkew(time.Hour))
	if cfg.WrapTransport == nil {
		t.Error("WatchDelay did not wrap the transport")
	}
	if o.Clock == nil {
		t.Fatal("no clock set by the skew")
	}
	if ahead := time.Until(o.Clock.Now()); ahead < 59*time.Minute || ahead > 61*time.Minute {
		t.Errorf("the skewed clock is %s ahead, want an hour", ahead)
	}
}
