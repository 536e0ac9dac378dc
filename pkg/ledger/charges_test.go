package ledger

import (
	"reflect"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// TestCharges: every recorded pod and claim of the namespace asked for,
// with what it is charged now (a template's claim only once the claim is
// made: nothing under its pod); sorted by kind and name.
func TestCharges(t *testing.T) {
	tmplPod := templatePod("team-a", "trainer", "pod-t", "gpu-10g")
	tests := []struct {
		name  string
		setup func(l *Ledger)
		ns    string
		want  []Charge
	}{
		{name: "unknown namespace: nothing", ns: "nope", setup: func(*Ledger) {}},
		{name: "a pod in its init phase is charged the init peak, bound to its node",
			ns:    "team-a",
			setup: func(l *Ledger) { l.UpsertPod(seedPod().UID("p1").InitRunning("convert-weights").Build()) },
			want:  []Charge{{Kind: ChargePod, Name: "llm-server", Node: "node1", State: effective.StateFull, Used: nv(1, 20480, 0)}}},
		{name: "init done: the app's share, steady",
			ns:    "team-a",
			setup: func(l *Ledger) { l.UpsertPod(seedPod().UID("p1").InitTerminated("convert-weights", 0).Build()) },
			want:  []Charge{{Kind: ChargePod, Name: "llm-server", Node: "node1", State: effective.StateSteady, Used: nv(1, 10240, 0)}}},
		{name: "other namespaces' pods and invalid pods are left out; an unbound pod has no node",
			ns: "team-a",
			setup: func(l *Ledger) {
				l.UpsertPod(testpod.New("b").NS("team-b").UID("b").App("app", gpu(1), mem(1)).Build())
				l.UpsertPod(testpod.New("bad").NS("team-a").UID("bad").App("app", testpod.Res(testpod.GPUName, "1500m")).Build())
				l.UpsertPod(testpod.New("z").NS("team-a").UID("z").App("app", gpu(2), mem(100), cores(10)).Build())
				l.UpsertPod(testpod.New("a").NS("team-a").UID("a").App("app", gpu(1), mem(1)).Build())
			},
			want: []Charge{
				{Kind: ChargePod, Name: "a", State: effective.StateFull, Used: nv(1, 1, 0)},
				{Kind: ChargePod, Name: "z", State: effective.StateFull, Used: nv(2, 200, 20)}}},
		{name: "a recorded claim, after the pods",
			ns: "ns",
			setup: func(l *Ledger) {
				l.UpsertClaim(hamiClaim("ns", "c1", "u1", 2, 4096))
				l.UpsertPod(testpod.New("p").NS("ns").UID("p").App("app", gpu(1), mem(1000)).Build())
			},
			want: []Charge{
				{Kind: ChargePod, Name: "p", State: effective.StateFull, Used: nv(1, 1000, 0)},
				{Kind: ChargeClaim, Name: "c1", Used: nv(2, 8192, 0)}}},
		{name: "a template's claim not made yet: nothing (no decision saw it; a pod of claims alone is no GPU pod record)",
			ns: "team-a",
			setup: func(l *Ledger) {
				l.UpsertTemplate(template("team-a", "gpu-10g", 10240))
				l.UpsertPod(tmplPod)
			}},
		{name: "the claim made: the claim is charged",
			ns: "team-a",
			setup: func(l *Ledger) {
				l.UpsertTemplate(template("team-a", "gpu-10g", 10240))
				l.UpsertPod(tmplPod)
				l.UpsertClaim(generatedClaim(tmplPod, "trainer-gpu-x1", "claim-1", 10240))
			},
			want: []Charge{{Kind: ChargeClaim, Name: "trainer-gpu-x1", Used: nv(1, 10240, 0)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newClaimLedger(t)
			tt.setup(l)
			got := l.Charges(tt.ns)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Charges(%q) =\n%+v\nwant\n%+v", tt.ns, got, tt.want)
			}
			var sum effective.Usage
			for _, c := range got {
				sum, _ = sum.Add(c.Used)
			}
			if used := l.Namespace(tt.ns, nil).Used; !sum.Equal(used) {
				t.Errorf("the charges sum to %s, the namespace is charged %s", sum, used)
			}
		})
	}
}

// TestChargesAreCopies: changing a charge changes nothing in the ledger.
func TestChargesAreCopies(t *testing.T) {
	l := newLedger(t)
	l.UpsertPod(testpod.New("p").NS("ns").UID("p").App("app", gpu(1), mem(1000)).Build())
	l.Charges("ns")[0].Used[nvidia] = vec(9, 9, 9)
	if got := l.Charges("ns")[0].Used; !got.Equal(nv(1, 1000, 0)) {
		t.Fatalf("a charge handed out was changed through its copy: %s", got)
	}
}
