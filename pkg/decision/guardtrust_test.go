package decision

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/policy"
	"github.com/gpuadmit/gpuadmit/rego"
)

// TestEditedBuiltinGuardStillFires attacks the guards with an operator's
// copy of limits.rego (same name: it replaces the built-in file) that
// keeps the guard line but makes the limit stricter (a pod may not reach
// the limit, only stay under it). input.guard.overLimit is proved against
// the built-in condition only, so at exactly the limit it would be empty
// and OPA's index would skip the stricter rule: the quota the operator
// wrote would be silently unenforced. The guards are trusted only when the
// built-in files as embedded read them; here every list names "*".
func TestEditedBuiltinGuardStillFires(t *testing.T) {
	l := benchLedger(t, 0)
	testns.Known(l, "edge")
	l.UpsertQuota(testquota.New("edge", "q", map[string]string{"limits.nvidia.com/gpumem": "8192"}))
	pod := testpod.New("at-the-limit").NS("edge").App("main", testpod.GPU(1), testpod.Mem(8192)).Build()

	builtin, err := fs.ReadFile(rego.FS, "limits.rego")
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(builtin), "usage.after[dim] > limit.value", "usage.after[dim] >= limit.value", 1)
	if edited == string(builtin) || !strings.Contains(edited, "input.guard.overLimit[0]") {
		t.Fatal("limits.rego no longer has the condition or the guard this test edits")
	}
	tests := []struct {
		name      string
		overrides []policy.Source
		reason    string // "" : allowed
		trusted   bool
	}{
		{name: "the built-in rules: the pod reaches the limit and is allowed", trusted: true},
		{name: "an operator's stricter copy keeping the guard line: denied", trusted: false, reason: "limit 8192 MiB",
			overrides: []policy.Source{policy.Map("operator", map[string]string{
				"limits.rego":      edited,
				"limits_test.rego": "package gpuadmit.builtin_test\n\ntest_replaced if true\n",
			})}},
		{name: "an operator's identical copy: still the built-in rules", trusted: true,
			overrides: []policy.Source{policy.Map("operator", map[string]string{"limits.rego": string(builtin)})}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := policy.New(policy.Options{})
			if err := e.Load(context.Background(), tc.overrides...); err != nil {
				t.Fatal(err)
			}
			p, err := e.Prepare()
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Reads().GuardsTrusted(); got != tc.trusted {
				t.Fatalf("guards trusted %v, want %v", got, tc.trusted)
			}
			res := decideCreate(t, e, l, pod)
			if tc.reason == "" {
				if !res.Allowed {
					t.Fatalf("denied: %q", res.Denials)
				}
				return
			}
			if res.Allowed || !strings.Contains(strings.Join(res.Denials, "\n"), tc.reason) {
				t.Fatalf("allowed %v, denials %q; want a denial naming %q", res.Allowed, res.Denials, tc.reason)
			}
		})
	}
}

// withInputPolicy is an operator's policy that enforces its own caps
// through the built-in rules, evaluated on an input it changes: a team
// limit of 0 GPUs in namespace capped, a request error in errs, and a
// near-limit threshold of 5 % everywhere. It reads no input.guard, but the
// guards (quiet above all) were computed from the input as built, where
// none of those lists names anything.
const withInputPolicy = `package gpuadmit.admission

zero_cap := [{"quota": "zero", "family": "nvidia", "dimension": "gpu", "key": "limits.nvidia.com/gpu",
	"value": 0, "invalid": false, "perUser": false, "user": "", "members": [input.namespace],
	"used": 0, "reserved": 0, "after": input.namespaceUsage.after.gpu, "afterPercent": 100}]

deny contains msg if {
	input.namespace == "capped"
	some msg in data.gpuadmit.builtin.deny with input.teamLimits as zero_cap
}

deny contains msg if {
	input.namespace == "errs"
	some msg in data.gpuadmit.builtin.deny with input.demand.errors as [{"container": "main", "resource": "nvidia.com/gpu", "value": "1", "reason": "not here"}]
}

warn contains msg if {
	some msg in data.gpuadmit.builtin.warn with input.settings.nearLimitPercent as 5
}
`

// TestGuardsUnderAReplacedInput: an operator's rule that evaluates the
// built-in rules with a part of the input replaced (with input.X as ...)
// makes the guards untrusted, so the built-in rules it reuses are not
// skipped: the capped and errs pods are denied, and the pod at 10 % of its
// namespace's limit is warned at the operator's 5 %.
func TestGuardsUnderAReplacedInput(t *testing.T) {
	l := benchLedger(t, 0)
	e := policy.New(policy.Options{})
	if err := e.Load(context.Background(), policy.Map("operator", map[string]string{"caps.rego": withInputPolicy})); err != nil {
		t.Fatal(err)
	}
	d, err := New(e, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	testns.Known(l, "capped", "errs", "roomy")
	l.UpsertQuota(testquota.New("roomy", "q", map[string]string{"limits.nvidia.com/gpu": "10"}))
	tests := []struct{ ns, denial, warning string }{
		{ns: "capped", denial: `limit 0 (GPUClusterQuota "zero"`},
		{ns: "errs", denial: "not here"},
		{ns: "roomy", warning: "at 10 % of its limit"},
	}
	for _, tc := range tests {
		pod := testpod.New("p").NS(tc.ns).App("main", testpod.GPU(1), testpod.Mem(1024)).Build()
		res, err := d.Decide(context.Background(), Request{Pod: pod, Operation: "CREATE"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(res.Denials, "\n"); tc.denial == "" && !res.Allowed || !strings.Contains(got, tc.denial) {
			t.Errorf("%s: denials %q, want one containing %q", tc.ns, res.Denials, tc.denial)
		}
		if got := strings.Join(res.Warnings, "\n"); !strings.Contains(got, tc.warning) {
			t.Errorf("%s: warnings %q, want one containing %q", tc.ns, res.Warnings, tc.warning)
		}
	}
}

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
				return decideCreate(t, e, l, pod)
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

// decideCreate decides pod's CREATE with engine e's active policy set on
// ledger l.
func decideCreate(t *testing.T, e *policy.Engine, l *ledger.Ledger, pod *corev1.Pod) Result {
	t.Helper()
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
