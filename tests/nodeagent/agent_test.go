package nodeagent_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/metadata"

	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/nodeagent"
	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery"
	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery/nvmlmock"
)

// countingNodes counts the patches that reach the API server.
type countingNodes struct {
	nodeagent.NodePatcher
	patches atomic.Int32
}

func (c *countingNodes) PatchNodeAnnotation(ctx context.Context, node, key, value string) error {
	c.patches.Add(1)
	return c.NodePatcher.PatchNodeAnnotation(ctx, node, key, value)
}

// TestAgentWritesItsNode runs the agent on a mock DGX H200 against the real
// API server, step by step: the first sync writes the annotation, unchanged
// devices patch nothing (patch count and resourceVersion unchanged), a device
// change is written, a missing Node is an API NotFound, and Run stops cleanly
// on cancellation without patching an unchanged node.
func TestAgentWritesItsNode(t *testing.T) {
	cp := startControlPlane(t)
	const nodeName = "gpu-node-1"
	cp.createNode(t, nodeName, map[string]string{"nvidia.com/gpu.present": "true"})

	lib, err := nvmlmock.New("dgxh200")
	if err != nil {
		t.Fatal(err)
	}
	disc, err := nvmldiscovery.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = disc.Close() })
	md, err := metadata.NewForConfig(cp.cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes := &countingNodes{NodePatcher: nodeagent.KubeNodes{Client: md}}
	agent := &nodeagent.Agent{NodeName: nodeName, Source: disc, Nodes: nodes}
	ctx := context.Background()

	steps := []struct {
		name        string
		before      func()
		node        string
		wantPatched bool
		wantPatches int32
		wantRVSame  bool
		check       func(t *testing.T, devs []devices.Device)
	}{
		{
			name: "first sync writes 8 H200", node: nodeName, wantPatched: true, wantPatches: 1,
			check: func(t *testing.T, devs []devices.Device) {
				if len(devs) != 8 {
					t.Fatalf("%d devices, want 8", len(devs))
				}
				for i, d := range devs {
					if d.Index != i || d.MemoryMiB != 144384 || d.SMCount != 132 || d.Cores != 100 || !d.Healthy || d.Model != "NVIDIA H200 141GB HBM3e" {
						t.Errorf("device %d: %+v", i, d)
					}
				}
			},
		},
		{name: "unchanged devices: no patch", node: nodeName, wantPatches: 1, wantRVSame: true},
		{name: "unchanged again: no patch", node: nodeName, wantPatches: 1, wantRVSame: true},
		{
			name: "GPU 3 fails row remapping: written", node: nodeName, wantPatched: true, wantPatches: 2,
			before: func() {
				lib.Devices[3].(*server.Device).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) {
					return 0, 5, false, true, nvml.SUCCESS
				}
			},
			check: func(t *testing.T, devs []devices.Device) {
				for i, d := range devs {
					if d.Healthy != (i != 3) {
						t.Errorf("device %d healthy = %v", i, d.Healthy)
					}
				}
			},
		},
		{name: "unchanged after the change: no patch", node: nodeName, wantPatches: 2, wantRVSame: true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before()
			}
			rv := cp.node(t, nodeName).ResourceVersion
			patched, err := agent.Sync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := cp.node(t, nodeName)
			if patched != st.wantPatched || nodes.patches.Load() != st.wantPatches {
				t.Errorf("patched = %v, %d patches in all; want %v, %d", patched, nodes.patches.Load(), st.wantPatched, st.wantPatches)
			}
			if (n.ResourceVersion == rv) != st.wantRVSame {
				t.Errorf("resourceVersion %s -> %s, want unchanged = %v", rv, n.ResourceVersion, st.wantRVSame)
			}
			value := n.Annotations[devices.NodeDevicesAnnotation]
			want, err := agent.Value(ctx)
			if err != nil || value != want {
				t.Fatalf("annotation = %q (%v), want %q", value, err, want)
			}
			devs, err := devices.DecodeNodeDevices(value)
			if err != nil {
				t.Fatal(err)
			}
			if st.check != nil {
				st.check(t, devs)
			}
			if n.Labels["nvidia.com/gpu.present"] != "true" {
				t.Errorf("labels changed: %v", n.Labels)
			}
		})
	}

	t.Run("missing node is NotFound", func(t *testing.T) {
		missing := &nodeagent.Agent{NodeName: "no-such-node", Source: disc, Nodes: nodes}
		if _, err := missing.Sync(ctx); !apierrors.IsNotFound(err) {
			t.Fatalf("err = %v, want NotFound", err)
		}
	})

	t.Run("Run stops on cancel and leaves an unchanged node alone", func(t *testing.T) {
		before := nodes.patches.Load()
		rv := cp.node(t, nodeName).ResourceVersion
		runner := &nodeagent.Agent{NodeName: nodeName, Source: disc, Nodes: nodes, Interval: 20 * time.Millisecond}
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		if err := runner.Run(ctx); err != nil {
			t.Fatalf("Run = %v, want nil", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Run took %s to stop", d)
		}
		if got := nodes.patches.Load(); got != before {
			t.Errorf("%d patches during Run of an unchanged node", got-before)
		}
		if got := cp.node(t, nodeName).ResourceVersion; got != rv {
			t.Errorf("resourceVersion %s -> %s", rv, got)
		}
	})
}
