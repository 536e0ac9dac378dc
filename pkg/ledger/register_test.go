package ledger

import (
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// hygonLedger reads the nvidia and the hygon families as HAMi's chart
// names them.
func hygonLedger(t *testing.T) (*Ledger, effective.Family) {
	t.Helper()
	var hygon effective.Family
	for _, f := range effective.HAMiFamilies() {
		if f.Name == "hygon" {
			hygon = f
		}
	}
	if hygon.Name == "" {
		t.Fatal("HAMiFamilies has no hygon family")
	}
	return New(Options{Families: []effective.Family{effective.Nvidia(), hygon}}), hygon
}

// TestWholeDeviceOfAnotherFamilySizedFromItsRegister: a Hygon container
// that names no memory books the whole DCU (HAMi pkg/device/hygon
// GenerateResourceRequests: 0 or unset dcumem is the whole card), sized
// from the node's hami.io/node-dcu-register; the charge never drops when
// the register shrinks, is garbled or goes; a garbled register is a node
// problem, and a DCU pod on a node that announces nothing stays unresolved
// (the policies deny it) rather than charged 0 MiB.
func TestWholeDeviceOfAnotherFamilySizedFromItsRegister(t *testing.T) {
	l, hygon := hygonLedger(t)
	dcu := testpod.Res(hygon.Names.Count, "1")
	register := func(memMiB string) map[string]string {
		// HAMi's legacy register format: id,count,devmem,devcore,type,numa,health
		return map[string]string{hygon.RegisterAnno: "DCU-0," + "4," + memMiB + ",100,DCU,0,true:"}
	}
	l.UpsertNode(testnode.Annotated("d1", map[string]string{"pool": "dcu"}, register("65536")))
	l.UpsertPod(testpod.New("whole").NS("ns").NodeSelector("pool", "dcu").App("c", dcu).Build())
	want := effective.Vector{GPU: 1, MemMiB: 65536, Cores: 100}
	if got := l.Namespace("ns", nil).Used.Of("hygon"); got != want {
		t.Fatalf("hygon usage = %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name, value string
		problem     string
	}{
		{"register shrinks", "DCU-0,4,16384,100,DCU,0,true:", ""},
		{"register garbled", "DCU-0,4,16384:", "node has no known hygon devices"},
		{"register removed", "", ""},
	} {
		annotations := map[string]string{hygon.RegisterAnno: tc.value}
		if tc.value == "" {
			annotations = nil
		}
		l.UpsertNode(testnode.Annotated("d1", map[string]string{"pool": "dcu"}, annotations))
		s := l.Namespace("ns", nil)
		if got := s.Used.Of("hygon"); got != want {
			t.Errorf("%s: hygon usage = %v, want %v (a charge never drops)", tc.name, got, want)
		}
		if !hasProblem(l.Snapshot(nil).Problems, ProblemNode, tc.problem) && tc.problem != "" {
			t.Errorf("%s: problems %v, want a node problem %q", tc.name, l.Snapshot(nil).Problems, tc.problem)
		}
		if !hasProblem(s.Problems, ProblemCharge, "charged for hygon devices of 65536 MiB") {
			t.Errorf("%s: problems %v, want the held charge reported", tc.name, s.Problems)
		}
	}
	l.UpsertPod(testpod.New("later").NS("other").NodeSelector("pool", "dcu").App("c", dcu).Build())
	s := l.Namespace("other", nil)
	if got := s.Used.Of("hygon"); got.MemMiB != 0 || len(s.Unresolved) != 1 {
		t.Errorf("a DCU pod where no node announces DCUs: usage %v, unresolved %v; want 0 MiB and unresolved", got, s.Unresolved)
	}
}

func hasProblem(ps []Problem, kind ProblemKind, text string) bool {
	for _, p := range ps {
		if p.Kind == kind && strings.Contains(p.String(), text) {
			return true
		}
	}
	return false
}

// TestAssignmentOfAnotherFamily: a bound Hygon pod's devices come from its
// family's HAMi annotation (hami.io/dcu-devices-allocated, HAMi's
// "UUID,Type,mem,cores:" per device and ";" per container, as its
// scheduler writes it) and show on the node's device; an edit of that
// annotation after binding changes nothing and is reported, like nvidia's.
func TestAssignmentOfAnotherFamily(t *testing.T) {
	l, hygon := hygonLedger(t)
	dcu := []testpod.Opt{testpod.Res(hygon.Names.Count, "1"), testpod.Res(hygon.Names.Memory, "8192")}
	p := testpod.New("p").NS("ns").UID("u1").App("c", dcu...).Node("d1").AppRunning("c").Build()
	p.Annotations = map[string]string{hygon.AllocAnno: "DCU-0,DCU,8192,100:;"}
	l.UpsertPod(p)
	snap := l.Snapshot(nil)
	if got := snap.Nodes["d1"].Devices["DCU-0"].Used; got != (effective.Vector{GPU: 1, MemMiB: 8192, Cores: 100}) {
		t.Fatalf("device DCU-0 uses %v, want the pod's 8192 MiB and 100 cores", got)
	}
	edited := p.DeepCopy()
	edited.Annotations[hygon.AllocAnno] = "DCU-9,DCU,1,1:;"
	l.UpsertPod(edited)
	snap = l.Snapshot(nil)
	if _, moved := snap.Nodes["d1"].Devices["DCU-9"]; moved || snap.Nodes["d1"].Devices["DCU-0"].Used.MemMiB != 8192 {
		t.Errorf("after the edit the node's devices are %v, want DCU-0 still charged", snap.Nodes["d1"].Devices)
	}
	if s := l.Namespace("ns", nil); !hasProblem(s.Problems, ProblemCharge, hygon.AllocAnno+" was changed after the pod was bound") ||
		s.Used.Of("hygon") != (effective.Vector{GPU: 1, MemMiB: 8192, Cores: 100}) {
		t.Errorf("usage %v, problems %v; want the charge unchanged and the edit reported", s.Used, s.Problems)
	}
}
