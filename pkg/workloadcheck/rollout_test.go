package workloadcheck_test

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
	"github.com/gpuadmit/gpuadmit/pkg/workloadcheck"
)

func deployment(t *testing.T, image, strategy string) map[string]any {
	t.Helper()
	o, err := workload.Decode([]byte(`{"spec":{"replicas":10,` + strategy + `"template":{"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestSurge(t *testing.T) {
	for _, tt := range []struct {
		name, kind, image, strategy string
		want                        int64
		err                         bool
	}{
		{name: "template unchanged", kind: "Deployment", image: "a:1", want: 0},
		{name: "default 25% of 10 rounded up", kind: "Deployment", image: "a:2", want: 3},
		{name: "maxSurge 1", kind: "Deployment", image: "a:2", strategy: `"strategy":{"rollingUpdate":{"maxSurge":1}},`, want: 1},
		{name: "maxSurge 0", kind: "Deployment", image: "a:2", strategy: `"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":1}},`, want: 0},
		{name: "maxSurge 50%", kind: "Deployment", image: "a:2", strategy: `"strategy":{"rollingUpdate":{"maxSurge":"50%"}},`, want: 5},
		{name: "Recreate", kind: "Deployment", image: "a:2", strategy: `"strategy":{"type":"Recreate"},`, want: 0},
		{name: "not a Deployment", kind: "StatefulSet", image: "a:2", want: 0},
		{name: "bad maxSurge", kind: "Deployment", image: "a:2", strategy: `"strategy":{"rollingUpdate":{"maxSurge":"x%"}},`, err: true},
		{name: "negative maxSurge", kind: "Deployment", image: "a:2", strategy: `"strategy":{"rollingUpdate":{"maxSurge":-1}},`, err: true},
	} {
		got, err := workloadcheck.Surge(tt.kind, deployment(t, "a:1", ""), deployment(t, tt.image, tt.strategy), 10)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("%s: Surge = %d, %v; want %d (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}

// TestOwnCharge: the workload's pods are those named as its controller
// names them; another workload's (Deployment "train-b" beside
// Deployment "train"), finished pods and claims are not.
func TestOwnCharge(t *testing.T) {
	nv := effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024})
	pod := func(name string) ledger.Charge { return ledger.Charge{Kind: ledger.ChargePod, Name: name, Used: nv} }
	long := strings.Repeat("x", 53) // "x…x-" is cut to 58 characters by the API server
	for _, tt := range []struct {
		kind, name string
		pods       []string
		want       int64
	}{
		{"Deployment", "train", []string{"train-5d8f9-bcdfg", "train-6c7b9d8f4-xz2k4", "train-b-5d8f9-bcdfg", "train-0", "training-5d8f9-bcdfg"}, 2},
		{"ReplicaSet", "train", []string{"train-bcdfg", "train-b-bcdfg", "train-5d8f9-bcdfg"}, 1},
		{"StatefulSet", "train", []string{"train-0", "train-12", "train-01", "train-b-0", "train-bcdfg"}, 2},
		{"Job", "train", []string{"train-bcdfg", "train-3-bcdfg", "train-b-bcdfg", "train-0"}, 2},
		{"Deployment", long, []string{long + "-5d8fbcdfg", long + "-b"}, 1},
		{"CronJob", "train", []string{"train-29001234-bcdfg", "training-0"}, 1},
		{"RayCluster", "train", []string{"train-head-bcdfg", "train-gpu-worker-bcdfg", "trainer-0"}, 2},
	} {
		charges := []ledger.Charge{{Kind: ledger.ChargeClaim, Name: tt.name + "-claim", Used: nv}}
		for _, p := range tt.pods {
			charges = append(charges, pod(p), ledger.Charge{Kind: ledger.ChargePod, Name: p, State: effective.StateZero, Used: nv})
		}
		if got := workloadcheck.OwnCharge(charges, tt.kind, tt.name).Of("nvidia"); got.GPU != tt.want || got.MemMiB != 1024*tt.want {
			t.Errorf("%s %s: own = %+v, want %d GPUs of %q", tt.kind, tt.name, got, tt.want, tt.pods)
		}
	}
}
