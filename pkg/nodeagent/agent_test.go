package nodeagent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/nodeagent"
)

// source is a DeviceSource whose devices (or error) the test sets.
type source struct {
	mu    sync.Mutex
	devs  []devices.Device
	err   error
	calls int // discoveries: one per sync
}

func (s *source) Devices(context.Context) ([]devices.Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.devs, s.err
}

func (s *source) syncs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *source) set(devs []devices.Device) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devs = devs
}

// nodes is an in-memory NodePatcher that counts patches and can fail.
type nodes struct {
	mu          sync.Mutex
	annotations map[string]map[string]string
	patches     int
	getErr      error
	patchErrs   int // the next patchErrs patches fail
}

func newNodes(node string, ann map[string]string) *nodes {
	return &nodes{annotations: map[string]map[string]string{node: ann}}
}

func (n *nodes) NodeAnnotation(_ context.Context, node, key string) (string, bool, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.getErr != nil {
		return "", false, n.getErr
	}
	ann, found := n.annotations[node]
	if !found {
		return "", false, errors.New("node not found")
	}
	v, ok := ann[key]
	return v, ok, nil
}

func (n *nodes) PatchNodeAnnotation(_ context.Context, node, key, value string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.patchErrs > 0 {
		n.patchErrs--
		return errors.New("connection refused")
	}
	if n.annotations[node] == nil {
		n.annotations[node] = map[string]string{}
	}
	n.annotations[node][key] = value
	n.patches++
	return nil
}

func (n *nodes) get(node string) (string, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.annotations[node][devices.NodeDevicesAnnotation], n.patches
}

var h200 = []devices.Device{{UUID: "GPU-a", Index: 0, Model: "NVIDIA H200", MemoryMiB: 143771, Cores: 100, SMCount: 132, Healthy: true}}

const h200JSON = `[{"uuid":"GPU-a","index":0,"model":"NVIDIA H200","memoryMiB":143771,"cores":100,"smCount":132,"migEnabled":false,"healthy":true}]`

func TestSync(t *testing.T) {
	tests := []struct {
		name        string
		node        string
		existing    map[string]string
		src         *source
		getErr      error
		patchErrs   int
		wantPatched bool
		wantErr     string
		wantValue   string
	}{
		{name: "annotation absent: written", node: "n1", existing: map[string]string{"other": "x"},
			src: &source{devs: h200}, wantPatched: true, wantValue: h200JSON},
		{name: "annotation equal: no patch", node: "n1", existing: map[string]string{devices.NodeDevicesAnnotation: h200JSON},
			src: &source{devs: h200}, wantPatched: false, wantValue: h200JSON},
		{name: "annotation differs: patched", node: "n1", existing: map[string]string{devices.NodeDevicesAnnotation: "[]"},
			src: &source{devs: h200}, wantPatched: true, wantValue: h200JSON},
		{name: "no GPU: empty list written", node: "n1", existing: map[string]string{},
			src: &source{}, wantPatched: true, wantValue: "[]"},
		{name: "discovery fails: nothing written", node: "n1", existing: map[string]string{devices.NodeDevicesAnnotation: "[]"},
			src: &source{err: errors.New("NVML DeviceGetCount: ERROR_UNKNOWN")}, wantErr: "discovering GPU devices: NVML DeviceGetCount", wantValue: "[]"},
		{name: "invalid device: nothing written", node: "n1", existing: map[string]string{},
			src: &source{devs: []devices.Device{{UUID: "", MemoryMiB: 1}}}, wantErr: `encoding GPU devices: gpuadmit.io/gpu-devices: device [0]: field "uuid" is empty`},
		{name: "get fails", node: "n1", existing: map[string]string{}, getErr: errors.New("forbidden"),
			src: &source{devs: h200}, wantErr: "reading annotation gpuadmit.io/gpu-devices of node n1: forbidden"},
		{name: "patch fails", node: "n1", existing: map[string]string{}, patchErrs: 1,
			src: &source{devs: h200}, wantErr: "patching annotation gpuadmit.io/gpu-devices of node n1: connection refused"},
		{name: "no node name", node: "", src: &source{devs: h200}, wantErr: "node name is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNodes("n1", tt.existing)
			n.getErr, n.patchErrs = tt.getErr, tt.patchErrs
			a := &nodeagent.Agent{NodeName: tt.node, Source: tt.src, Nodes: n}
			patched, err := a.Sync(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			value, patches := n.get("n1")
			if patched != tt.wantPatched || patches != map[bool]int{true: 1}[tt.wantPatched] {
				t.Errorf("patched = %v with %d patches, want %v", patched, patches, tt.wantPatched)
			}
			if value != tt.wantValue {
				t.Errorf("annotation = %q, want %q", value, tt.wantValue)
			}
			if tt.existing["other"] != "" && n.annotations["n1"]["other"] != tt.existing["other"] {
				t.Errorf("other annotation changed")
			}
		})
	}
}

// TestRun: Run writes at once, follows device changes at every refresh,
// retries a failed patch, never patches an unchanged value, and returns nil
// promptly when its context is cancelled (SIGTERM).
func TestRun(t *testing.T) {
	tests := []struct {
		name        string
		patchErrs   int
		change      bool
		wantPatches int
	}{
		{name: "unchanged devices: one patch", wantPatches: 1},
		{name: "devices change: second patch", change: true, wantPatches: 2},
		{name: "API server down at start: retried", patchErrs: 2, wantPatches: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &source{devs: h200}
			n := newNodes("n1", map[string]string{})
			n.patchErrs = tt.patchErrs
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			a := &nodeagent.Agent{NodeName: "n1", Source: src, Nodes: n, Interval: time.Minute, Clock: clk}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			stepUntil(t, clk, func() bool { v, _ := n.get("n1"); return v == h200JSON })
			want := h200JSON
			if tt.change {
				changed := append([]devices.Device(nil), h200...)
				changed[0].Healthy = false
				src.set(changed)
				want = strings.Replace(h200JSON, `"healthy":true`, `"healthy":false`, 1)
				stepUntil(t, clk, func() bool { v, _ := n.get("n1"); return v == want })
			}
			more := src.syncs() + 3
			stepUntil(t, clk, func() bool { return src.syncs() >= more }) // three more refreshes
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Run = %v, want nil on cancel", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return after cancel")
			}
			if v, patches := n.get("n1"); v != want || patches != tt.wantPatches {
				t.Errorf("annotation %q after %d patches, want %q after %d", v, patches, want, tt.wantPatches)
			}
		})
	}
}

// stepUntil steps clk by the agent's interval each time the agent waits
// on it, until cond holds (a generous ceiling fails the test: what is
// asserted is the condition, not how long it took).
func stepUntil(t *testing.T, clk *clocktesting.FakeClock, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if cond() {
			return true, nil
		}
		if clk.HasWaiters() {
			clk.Step(time.Minute)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("condition not reached: %v", err)
	}
}
