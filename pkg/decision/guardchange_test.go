package decision

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
)

// TestOperatorChangesToTheBuiltinRules attacks the guards with operator
// policies that change what a built-in rule computes without reading
// input.guard (a second context-free review found each): a built-in
// function replaced (gt by gte: a stricter limit), a built-in rule
// replaced by name or through an import's alias, a rule of the operator's
// own in the built-in package. The guards were proved against the
// built-in rules as embedded, so each makes them untrusted: the decision
// equals that of the same rules without guard lines, which deny.
func TestOperatorChangesToTheBuiltinRules(t *testing.T) {
	tests := []struct {
		name, src  string
		gpuNodes   bool
		mem        int64 // of the pod, in a namespace limited to 8192 MiB
		wantDenial string
	}{
		{name: "a built-in function replaced", gpuNodes: true, mem: 8192, wantDenial: "limit 8192 MiB",
			src: "package gpuadmit.admission\n\ndeny contains msg if {\n\tsome msg in data.gpuadmit.builtin.deny with gt as gte\n}\n"},
		{name: "a built-in rule replaced", mem: 1024, wantDenial: "operator: no GPU node",
			src: "package gpuadmit.admission\n\ndeny contains msg if {\n\tsome msg in data.gpuadmit.builtin.deny with data.gpuadmit.builtin.unsatisfiable as {\"operator: no GPU node\"}\n}\n"},
		{name: "built-in rules replaced through an import's alias", gpuNodes: true, mem: 1024, wantDenial: "operator: nothing fits",
			src: "package gpuadmit.admission\n\nimport data.gpuadmit.builtin as b\n\ndeny contains msg if {\n\tsome msg in b.deny with b.all_fit as false with b.unsatisfiable as {\"operator: nothing fits\"}\n}\n"},
		{name: "an operator's rule in the built-in package", mem: 1024, wantDenial: "no GPU node is known",
			src: "package gpuadmit.builtin\n\nunsatisfiable contains msg if {\n\tinput.operation == \"CREATE\"\n\tinput.capacity.gpuNodes == 0\n\tinput.namespace == \"edge\"\n\tmsg := sprintf(\"pod %q: no GPU node is known\", [input.pod.name])\n}\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := ledger.New(ledger.Options{Families: config.Families(config.Default()), Log: logr.Discard()})
			if tc.gpuNodes {
				l = benchLedger(t, 0)
			}
			testns.Known(l, "edge")
			l.UpsertQuota(testquota.New("edge", "q", map[string]string{"limits.nvidia.com/gpumem": "8192"}))
			pod := testpod.New("p").NS("edge").App("main", testpod.GPU(1), testpod.Mem(tc.mem)).Build()
			decide := func(opts policy.Options) Result {
				e := policy.New(opts)
				if err := e.Load(context.Background(), policy.Map("operator", map[string]string{"op.rego": tc.src})); err != nil {
					t.Fatal(err)
				}
				d, err := New(e, l, config.Default(), logr.Discard())
				if err != nil {
					t.Fatal(err)
				}
				res, err := d.Decide(context.Background(), Request{Pod: pod, Operation: "CREATE"})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			plain, guarded := decide(policy.Options{Base: unguarded(t)}), decide(policy.Options{})
			if !strings.Contains(strings.Join(plain.Denials, "\n"), tc.wantDenial) {
				t.Fatalf("without guards: denials %q, want one containing %q", plain.Denials, tc.wantDenial)
			}
			if guarded.Allowed != plain.Allowed || !slices.Equal(guarded.Denials, plain.Denials) || !slices.Equal(guarded.Warnings, plain.Warnings) {
				t.Errorf("guarded: allowed %v, denials %q, warnings %q; without guards: %v, %q, %q",
					guarded.Allowed, guarded.Denials, guarded.Warnings, plain.Allowed, plain.Denials, plain.Warnings)
			}
		})
	}
}
