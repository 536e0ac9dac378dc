package testhooks_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
)

// TestFileClock: the clock runs ahead by the file's duration, re-read at
// most every 100 ms, never moved back, zero while the file is missing or
// holds garbage.
func TestFileClock(t *testing.T) {
	base := testclock.NewFakeClock(time.Unix(1000, 0))
	path := filepath.Join(t.TempDir(), "offset")
	clk := testhooks.NewFileClock(base, path)
	if got := clk.Now(); !got.Equal(base.Now()) {
		t.Fatalf("no file: %v, want the base clock %v", got, base.Now())
	}
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("2h\n")
	if got := clk.Now(); !got.Equal(base.Now()) {
		t.Errorf("re-read before 100 ms: %v", got)
	}
	base.Step(100 * time.Millisecond)
	if got, want := clk.Now(), base.Now().Add(2*time.Hour); !got.Equal(want) {
		t.Errorf("after 100 ms: %v, want %v", got, want)
	}
	for _, s := range []string{"1h", "garbage", "-5h"} {
		write(s)
		base.Step(time.Second)
		if got, want := clk.Now(), base.Now().Add(2*time.Hour); !got.Equal(want) {
			t.Errorf("file %q: %v, want %v (never back)", s, got, want)
		}
	}
}
