package ledger

import (
	"testing"

	"github.com/go-logr/logr/testr"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

var (
	gpu   = testpod.GPU
	mem   = testpod.Mem
	pct   = testpod.MemPct
	cores = testpod.Cores
)

func newLedger(t testing.TB) *Ledger {
	opts := Options{Families: []effective.Family{effective.Nvidia()}}
	if tt, ok := t.(*testing.T); ok {
		opts.Log = testr.New(tt)
	}
	return New(opts)
}

func vec(g, m, c int64) effective.Vector { return effective.Vector{GPU: g, MemMiB: m, Cores: c} }

func dev(uuid string, memMiB int64) devices.Device {
	return devices.Device{UUID: uuid, Model: "NVIDIA A10", MemoryMiB: memMiB, Cores: 100, Healthy: true}
}

// seedPod is the seed's llm-server: init convert-weights 20 GiB, app server 10 GiB, on GPU-0 of node1.
func seedPod() *testpod.Builder {
	return testpod.New("llm-server").NS("team-a").
		Init("convert-weights", gpu(1), mem(20480)).App("server", gpu(1), mem(10240)).
		Node("node1").Devices("GPU-0,NVIDIA,20480,0:;GPU-0,NVIDIA,10240,0:;")
}

// stored returns what the ledger stores for a pod: state, namespace usage, devices.
func stored(l *Ledger, uid string) (effective.State, effective.Usage, map[string]effective.Vector) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	r, ok := l.pods[types.UID(uid)]
	if !ok {
		return "", nil, nil
	}
	devs := map[string]effective.Vector{}
	for _, d := range r.devices {
		devs[d.uuid] = d.used
	}
	return r.state, r.used, devs
}

// deviceUsed returns one device's usage.
func deviceUsed(l *Ledger, node, uuid string) effective.Vector {
	return l.Snapshot(nil).Nodes[node].Devices[uuid].Used
}
