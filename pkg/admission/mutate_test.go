package admission

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

func TestMutator(t *testing.T) {
	scenario2 := func() *testpod.Builder {
		return testpod.New("llm-server").NS("team-a").Init("convert", testpod.GPU(1), testpod.Mem(20480)).App("server", testpod.GPU(1), testpod.Mem(10240))
	}
	const want20 = `{"gpu":1,"gpumem":20480,"gpucores":0}`
	for _, tc := range []struct {
		name      string
		op        admissionv1.Operation
		pod       *corev1.Pod
		wantPatch string // "" = no patch
		wantWarn  bool
	}{
		{"gpu pod without annotations gets the map", admissionv1.Create, scenario2().Build(),
			`[{"op":"add","path":"/metadata/annotations","value":{"gpuadmit.io/effective":` + quote(want20) + `}}]`, false},
		{"gpu pod with other annotations gets the key", admissionv1.Create, scenario2().Annotate("a", "b").Build(),
			`[{"op":"add","path":"/metadata/annotations/gpuadmit.io~1effective","value":` + quote(want20) + `}]`, false},
		{"a wrong (forged) annotation is replaced", admissionv1.Create, scenario2().Annotate(EffectiveAnnotation, `{"gpu":0}`).Build(),
			`[{"op":"add","path":"/metadata/annotations/gpuadmit.io~1effective","value":` + quote(want20) + `}]`, false},
		{"reinvocation: already equal, no patch", admissionv1.Create, scenario2().Annotate(EffectiveAnnotation, want20).Build(), "", false},
		{"non-gpu pod: nothing", admissionv1.Create, testpod.New("web").NS("team-a").App("c", testpod.CPU("1")).Build(), "", false},
		{"invalid request: left to validation", admissionv1.Create, testpod.New("bad").NS("team-a").App("c", testpod.Res(testpod.MemName, "1.5")).Build(), "", false},
		{"delete: nothing", admissionv1.Delete, scenario2().Build(), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &Mutator{Demand: computeDemand{}}
			resp := m.Handle(t.Context(), review(t, tc.op, tc.pod, false))
			if !resp.Allowed {
				t.Fatalf("mutator denied: %+v", resp.Result)
			}
			if tc.wantWarn != (len(resp.Warnings) > 0) {
				t.Errorf("warnings = %q", resp.Warnings)
			}
			got := patchJSON(t, resp)
			if got != tc.wantPatch {
				t.Errorf("patch:\n got %s\nwant %s", got, tc.wantPatch)
			}
		})
	}
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// patchJSON is the response's patch as the API server receives it.
func patchJSON(t *testing.T, resp admission.Response) string {
	t.Helper()
	if len(resp.Patches) == 0 {
		if resp.PatchType != nil {
			t.Errorf("patch type %s without a patch", *resp.PatchType)
		}
		return ""
	}
	if err := resp.Complete(admission.Request{}); err != nil {
		t.Fatal(err)
	}
	return string(resp.Patch)
}

// TestMutatorGate: before the gate opens a GPU pod is refused (its
// annotation would resolve against an unsynced ledger); others pass.
func TestMutatorGate(t *testing.T) {
	m := &Mutator{Gate: gateFunc(func() error { return errors.New("the pods watch has not synced yet") }), Demand: computeDemand{}}
	resp := m.Handle(t.Context(), review(t, admissionv1.Create, testpod.New("p").NS("a").App("c", testpod.GPU(1)).Build(), false))
	if resp.Allowed || resp.Result.Code != 500 || !strings.Contains(resp.Result.Message, "not ready to decide on pod a/p") {
		t.Errorf("GPU pod while not ready: %+v", resp.Result)
	}
	resp = m.Handle(t.Context(), review(t, admissionv1.Create, testpod.New("web").NS("a").App("c", testpod.CPU("1")).Build(), false))
	if !resp.Allowed {
		t.Errorf("non-GPU pod while not ready refused: %+v", resp.Result)
	}
}
