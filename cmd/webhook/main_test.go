//go:build !gpuadmit_testhooks

package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"
)

// TestNoTestHooksInProduction: the production build (no gpuadmit_testhooks
// tag) refuses the fault-injection flags as any unknown flag, exit 2,
// before it reads a configuration or reaches a cluster, and its help does
// not list them.
func TestNoTestHooksInProduction(t *testing.T) {
	if testHooks != nil {
		t.Fatal("the production build has test hooks")
	}
	for _, arg := range []string{testhooks.WatchDelay(time.Second), testhooks.ClockSkew(time.Second), testhooks.ClockFile("/tmp/offset")} {
		var stderr bytes.Buffer
		if code := run(t.Context(), []string{arg}, &stderr, &stderr); code != 2 {
			t.Errorf("webhook %s: exit %d, want 2; stderr:\n%s", arg, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "flag provided but not defined") {
			t.Errorf("webhook %s: stderr does not refuse the flag:\n%s", arg, stderr.String())
		}
	}
	var help bytes.Buffer
	run(t.Context(), []string{"--help"}, &help, &help)
	for _, name := range []string{testhooks.WatchDelayFlag, testhooks.ClockSkewFlag, testhooks.ClockFileFlag} {
		if strings.Contains(help.String(), name) {
			t.Errorf("--help lists %s:\n%s", name, help.String())
		}
	}
	if !strings.Contains(help.String(), "-shutdown-delay") {
		t.Errorf("--help does not list the wiring flags:\n%s", help.String())
	}
}

// TestVersion: --version prints the version and commit on stdout and exits 0
// before it reads a configuration or reaches a cluster.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"--version", "--config", "/nonexistent/config.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if got := stdout.String(); got != "webhook unknown commit unknown\n" {
		t.Errorf("stdout %q", got)
	}
}
