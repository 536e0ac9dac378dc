package membership

import (
	"strings"
	"testing"
	"time"
)

// TestLivenessSigns: a late heartbeat (the process was paused) or a long
// run of failed renewals makes the replica suspect since then; renewals
// failing for a few seconds make it not connected.
func TestLivenessSigns(t *testing.T) {
	var l liveness
	l.init()
	l.epoch = l.epoch.Add(-time.Hour) // a process running for an hour
	if l.suspectSince() != 0 || l.connected() != nil {
		t.Fatal("a replica that has not started is suspect")
	}
	now := l.now()
	l.lastBeat.Store(now - int64(2*time.Second)) // the beating goroutine last ran 2 s ago
	if got := l.suspectSince(); got == 0 || got > now {
		t.Fatalf("a late heartbeat: suspect since %d, want before %d", got, now)
	}
	l.lastBeat.Store(now)
	l.pausedAt.Store(now)
	if l.suspectSince() != now {
		t.Fatal("a pause seen: not suspect since it")
	}
	l.lastRenew.Store(now - int64(4*time.Second))
	if err := l.connected(); err == nil || !strings.Contains(err.Error(), "has not reached the API server") {
		t.Fatalf("renewals failing for 4s: connected = %v", err)
	}
	l.pausedAt.Store(0)
	l.lastRenew.Store(now - int64(6*time.Second))
	if l.suspectSince() == 0 {
		t.Fatal("renewals failing past staleAfter: not suspect")
	}
}
