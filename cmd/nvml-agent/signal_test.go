package main

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the command's goroutine and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestSIGTERM: SIGTERM stops the agent cleanly (exit 0) whatever it is
// doing: here, waiting for NVML (--wait-for-nvml) and retrying a sync
// against an unreachable API server.
func TestSIGTERM(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		waitFor   string // printed once the agent is in the state to interrupt
		wantFinal string
	}{
		{
			name:      "waiting for NVML",
			args:      []string{"--nvml", "real", "--nvml-library", "/nonexistent/libnvidia-ml.so.1", "--wait-for-nvml", "--node-name", "n1"},
			waitFor:   "NVML not usable yet, retrying",
			wantFinal: "stopped while waiting for NVML",
		},
		{
			name:      "syncing with the API server down",
			args:      []string{"--nvml", "mock:dgxh200", "--node-name", "n1", "--kubeconfig", "testdata/unreachable.kubeconfig"},
			waitFor:   "GPU device sync failed",
			wantFinal: "stopping GPU device sync",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr lockedBuffer
			done := make(chan int, 1)
			go func() { done <- run(tt.args, func(string) string { return "" }, &stdout, &stderr) }()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(stderr.String(), tt.waitFor) {
				if time.Now().After(deadline) {
					t.Fatalf("agent never logged %q:\n%s", tt.waitFor, stderr.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("exit %d after SIGTERM, want 0:\n%s", code, stderr.String())
				}
			case <-time.After(5 * time.Second):
				t.Fatal("agent did not stop within 5s of SIGTERM")
			}
			if !strings.Contains(stderr.String(), tt.wantFinal) {
				t.Errorf("stderr does not contain %q:\n%s", tt.wantFinal, stderr.String())
			}
		})
	}
}
