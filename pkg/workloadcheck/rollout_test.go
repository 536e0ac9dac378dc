package workloadcheck_test

import (
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
// names them; another workload's, and finished pods, are not.
func TestOwnCharge(t *testing.T) {
	nv := effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1024})
	charges := []ledger.Charge{
		{Kind: ledger.ChargePod, Name: "train-5d8f9-abcde", Used: nv},
		{Kind: ledger.ChargePod, Name: "train-0", Used: nv},
		{Kind: ledger.ChargePod, Name: "training-0", Used: nv},
		{Kind: ledger.ChargePod, Name: "train-done", State: effective.StateZero, Used: nv},
		{Kind: ledger.ChargeClaim, Name: "train-claim", Used: nv},
	}
	if got := workloadcheck.OwnCharge(charges, "train").Of("nvidia"); got.GPU != 2 || got.MemMiB != 2048 {
		t.Fatalf("own = %+v, want 2 GPUs, 2048 MiB", got)
	}
}
