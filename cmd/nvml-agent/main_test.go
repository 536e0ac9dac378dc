package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// TestRun drives the command as a user would, without an API server: the
// mock backends print their devices, the real backend on a machine without
// NVML fails cleanly (exit 1, a message naming NVML and what to check), and
// bad flags exit 2.
func TestRun(t *testing.T) {
	noEnv := func(string) string { return "" }
	tests := []struct {
		name       string
		args       []string
		getenv     func(string) string
		wantCode   int
		wantOut    func(t *testing.T, out string)
		wantStderr []string
	}{
		{
			name: "mock dgxh200 prints 8 H200", args: []string{"--nvml", "mock:dgxh200", "--once", "--print"}, getenv: noEnv,
			wantOut: func(t *testing.T, out string) {
				devs, err := devices.DecodeNodeDevices(out)
				if err != nil {
					t.Fatal(err)
				}
				if len(devs) != 8 || devs[7].MemoryMiB != 144384 || devs[7].SMCount != 132 || devs[7].Index != 7 {
					t.Errorf("got %+v", devs)
				}
			},
		},
		{
			name: "mock dgxa100-mig prints MIG instances", args: []string{"--nvml=mock:dgxa100-mig", "--once", "--print"}, getenv: noEnv,
			wantOut: func(t *testing.T, out string) {
				devs, err := devices.DecodeNodeDevices(out)
				if err != nil {
					t.Fatal(err)
				}
				if len(devs) != 15 || devs[0].MIGProfile != "1g.5gb" || devs[0].ParentUUID == "" {
					t.Errorf("got %+v", devs)
				}
			},
		},
		{
			name: "real NVML missing", args: []string{"--nvml", "real", "--nvml-library", "/nonexistent/libnvidia-ml.so.1", "--once", "--print"}, getenv: noEnv,
			wantCode:   1,
			wantStderr: []string{"nvml-agent: NVML initialisation failed (ERROR_LIBRARY_NOT_FOUND)", "libnvidia-ml.so.1", "library path", "driver installed", "NVIDIA container runtime"},
		},
		{
			name: "unknown mock", args: []string{"--nvml", "mock:dgx1", "--once", "--print"}, getenv: noEnv,
			wantCode: 2, wantStderr: []string{`unknown NVML mock system "dgx1"`},
		},
		{
			name: "unknown backend", args: []string{"--nvml", "fake", "--once", "--print"}, getenv: noEnv,
			wantCode: 2, wantStderr: []string{`--nvml "fake": want real or mock:<system>`},
		},
		{
			name: "print without once", args: []string{"--nvml", "mock:dgxh200", "--print"}, getenv: noEnv,
			wantCode: 2, wantStderr: []string{"--print needs --once"},
		},
		{
			// --version needs neither a node name nor NVML (the image test runs it through the image's own loader).
			name: "version without node or NVML", args: []string{"--version", "--nvml-library", "/nonexistent/libnvidia-ml.so.1"}, getenv: noEnv,
			wantOut: func(t *testing.T, out string) {
				if out != "nvml-agent unknown commit unknown" {
					t.Errorf("got %q", out)
				}
			},
		},
		{
			name: "no node name", args: []string{"--nvml", "mock:dgxh200"}, getenv: noEnv,
			wantCode: 2, wantStderr: []string{"--node-name (or $NODE_NAME) is required"},
		},
		{
			name: "node name from NODE_NAME, no API server reachable", args: []string{"--nvml", "mock:dgxh200", "--once", "--kubeconfig", "/nonexistent/kubeconfig"},
			getenv:   func(k string) string { return map[string]string{"NODE_NAME": "gpu-1"}[k] },
			wantCode: 1, wantStderr: []string{"kubernetes client configuration"},
		},
		{
			name: "bad interval", args: []string{"--node-name", "n", "--interval", "0s"}, getenv: noEnv,
			wantCode: 2, wantStderr: []string{"--interval must be positive"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, tt.getenv, &stdout, &stderr)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if tt.wantOut != nil {
				tt.wantOut(t, strings.TrimSpace(stdout.String()))
			} else if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %s", stdout.String())
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not contain %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}
