package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func dev(node, uuid, model, resource, typ string) string {
	return "model=" + model + ",node=" + node + ",resource=" + resource + ",type=" + typ + ",uuid=" + uuid
}

func TestDeviceMetric(t *testing.T) {
	l4 := func(uuid string, index int) devices.Device {
		return devices.Device{UUID: uuid, Index: index, Model: "NVIDIA L4", MemoryMiB: 23034, Cores: 100, Healthy: true}
	}
	renamed := effective.Nvidia()
	renamed.Names.Memory, renamed.Names.Cores = "example.com/vmem", "example.com/vcores"
	for _, tt := range []struct {
		name  string
		world world
		want  map[string]float64
	}{
		{name: "no GPU nodes: no series"},
		{name: "announced devices: capacity, and used 0 while idle",
			world: world{nodes: []*corev1.Node{testnode.WithDevices("n1", nil, l4("GPU-a", 0), l4("GPU-b", 1))}},
			want: map[string]float64{
				dev("n1", "GPU-a", "NVIDIA L4", memRes, "capacity"): 23034, dev("n1", "GPU-a", "NVIDIA L4", coresRes, "capacity"): 100,
				dev("n1", "GPU-a", "NVIDIA L4", memRes, "used"): 0, dev("n1", "GPU-a", "NVIDIA L4", coresRes, "used"): 0,
				dev("n1", "GPU-b", "NVIDIA L4", memRes, "capacity"): 23034, dev("n1", "GPU-b", "NVIDIA L4", coresRes, "capacity"): 100,
				dev("n1", "GPU-b", "NVIDIA L4", memRes, "used"): 0, dev("n1", "GPU-b", "NVIDIA L4", coresRes, "used"): 0,
			}},
		{name: "assigned pods charge their devices; an unannounced device has used series only",
			world: world{
				nodes: []*corev1.Node{testnode.WithDevices("n1", nil, l4("GPU-a", 0))},
				pods: []*testpod.Builder{
					testpod.New("a").NS("ns").App("main", testpod.GPU(1), testpod.Mem(8192), testpod.Cores(30)).
						Node("n1").Devices("GPU-a,NVIDIA,8192,30:;").AppRunning("main"),
					testpod.New("b").NS("ns").App("main", testpod.GPU(1), testpod.Mem(4096), testpod.Cores(20)).
						Node("n1").Devices("GPU-a,NVIDIA,4096,20:;").AppRunning("main"),
					testpod.New("c").NS("ns").App("main", testpod.GPU(1), testpod.Mem(1000), testpod.Cores(10)).
						Node("n9").Devices("GPU-z,NVIDIA,1000,10:;").AppRunning("main"),
				},
			},
			want: map[string]float64{
				dev("n1", "GPU-a", "NVIDIA L4", memRes, "capacity"): 23034, dev("n1", "GPU-a", "NVIDIA L4", coresRes, "capacity"): 100,
				dev("n1", "GPU-a", "NVIDIA L4", memRes, "used"): 12288, dev("n1", "GPU-a", "NVIDIA L4", coresRes, "used"): 50,
				dev("n9", "GPU-z", "", memRes, "used"): 1000, dev("n9", "GPU-z", "", coresRes, "used"): 10,
			}},
		{name: "the configured resource names",
			world: world{settings: &renamed, nodes: []*corev1.Node{testnode.WithDevices("n1", nil, l4("GPU-a", 0))}},
			want: map[string]float64{
				dev("n1", "GPU-a", "NVIDIA L4", "example.com/vmem", "capacity"): 23034, dev("n1", "GPU-a", "NVIDIA L4", "example.com/vcores", "capacity"): 100,
				dev("n1", "GPU-a", "NVIDIA L4", "example.com/vmem", "used"): 0, dev("n1", "GPU-a", "NVIDIA L4", "example.com/vcores", "used"): 0,
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				tt.want = map[string]float64{}
			}
			compareSeries(t, gathered(t, newDeviceCollector(tt.world.ledger()), "gpuadmit_device"), tt.want)
		})
	}
}

// TestDeviceCollectorBounds checks the documented cardinality bound
// (devices × 2 resources × 2 types) and the exposition's conventions.
func TestDeviceCollectorBounds(t *testing.T) {
	w := world{nodes: []*corev1.Node{testnode.WithGPUs("n1", nil, 24576, 24576), testnode.WithGPUs("n2", nil, 81920)}}
	c := newDeviceCollector(w.ledger())
	if n := testutil.CollectAndCount(c, "gpuadmit_device"); n != 3*2*2 {
		t.Errorf("gpuadmit_device has %d series, want 12 (3 devices × 2 resources × 2 types)", n)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
