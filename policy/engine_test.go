package policy_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuadmit/gpuadmit/policy"
)

// input is a PolicyInput (docs/policy-input.md): pod "name" needs 30 GiB in
// a namespace limited to 24 GiB, on a cluster without known GPU nodes. The
// nvidia family's demand, usage and settings are at the first level and
// under families.
func input(t testing.TB, name string) ast.Value {
	t.Helper()
	const demand = `"effective": {"gpu": 1, "gpumem": 30720, "gpucores": 0}, "unresolved": [],
		"maxPerDevice": {"gpu": 1, "gpumem": 30720, "gpucores": 0},
		"containers": [{"name": "c", "role": "app", "gpu": 1, "gpumemPerDevice": 30720, "gpumemPercent": 0,
			"gpucoresPerDevice": 0, "unresolved": false, "total": {"gpu": 1, "gpumem": 30720, "gpucores": 0}}]`
	const usage = `"used": {"gpu": 0, "gpumem": 0, "gpucores": 0}, "reserved": {"gpu": 0, "gpumem": 0, "gpucores": 0},
		"after": {"gpu": 1, "gpumem": 30720, "gpucores": 0},
		"limits": {"gpumem": {"value": 24576, "quota": "q", "key": "limits.nvidia.com/gpumem", "afterPercent": 125}}`
	const settings = `"resourceNames": {"gpu": "nvidia.com/gpu", "gpumem": "nvidia.com/gpumem",
		"gpumem-percentage": "nvidia.com/gpumem-percentage", "gpucores": "nvidia.com/gpucores"}, "memoryFactor": 1`
	return ast.MustParseTerm(`{
		"apiVersion": "gpuadmit.io/v1alpha1", "kind": "PolicyInput", "operation": "CREATE", "dryRun": false,
		"namespace": "team-a", "pod": {"name": "` + name + `"},
		"demand": {` + demand + `, "errors": [], "families": {"nvidia": {` + demand + `}}},
		"namespaceUsage": {` + usage + `, "nativeRequestQuotas": [], "families": {"nvidia": {` + usage + `}}},
		"capacity": {"gpuNodes": 0, "eligibleNodes": 0, "maxDevicesPerNode": 0, "shapes": []},
		"guard": {"quiet": false, "overLimit": ["nvidia"], "nearLimit": [], "unfit": [], "unresolvedFamilies": []},
		"settings": {` + settings + `, "families": {"nvidia": {` + settings + `}},
			"nearLimitPercent": 90, "unsatisfiable": "deny"}}`).Value
}

const quotaDenial = `namespace "team-a": nvidia.com/gpumem: pod needs 30720 MiB, 0 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota "q" limits.nvidia.com/gpumem)`

const extraPolicy = `package gpuadmit.admission

deny contains "no pods named forbidden" if input.pod.name == "forbidden"
`

const extraPolicyTest = `package gpuadmit.admission_test

import data.gpuadmit.admission

test_forbidden if {
	"no pods named forbidden" in admission.deny with input as {"pod": {"name": "forbidden"}}
}
`

const denyAll = `package gpuadmit.admission

deny contains "every pod is denied here" if true
`

const denyAllTest = `package gpuadmit.denyall_test

import data.gpuadmit.admission

test_denies_an_empty_input if {
	"every pod is denied here" in admission.deny with input as {}
}
`

// costCenter is the rule the README shows operators.
const costCenter = `package gpuadmit.admission

deny contains "cost-center label required" if {
	not input.pod.labels["cost-center"]
}
`

// slowPolicy loops over 10^10 pairs for pods named "slow".
const slowPolicy = `package gpuadmit.admission

deny contains "slow" if {
	input.pod.name == "slow"
	some a in numbers.range(1, 100000)
	some b in numbers.range(1, 100000)
	a * b < 0
}
`

func loaded(t *testing.T, overrides ...policy.Source) *policy.Engine {
	t.Helper()
	e := policy.New(policy.Options{})
	if err := e.Load(context.Background(), overrides...); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestEvalBeforeLoad(t *testing.T) {
	_, err := policy.New(policy.Options{}).Eval(context.Background(), input(t, "p"))
	if !errors.Is(err, policy.ErrNoPolicy) {
		t.Fatalf("err = %v, want ErrNoPolicy", err)
	}
}

func TestLoadRejectsBrokenSetsAndKeepsTheLastGood(t *testing.T) {
	tests := []struct {
		name    string
		modules map[string]string
		wantErr string // "" means the set is activated
		// wantDeny for pod "forbidden" once the set is active.
		wantDeny []string
	}{
		{name: "added policy with its test", modules: map[string]string{"extra.rego": extraPolicy, "extra_test.rego": extraPolicyTest},
			wantDeny: []string{quotaDenial, "no pods named forbidden"}},
		// An operator's rule in gpuadmit.admission never reaches the
		// built-in tests (they test gpuadmit.builtin), so a rule that denies
		// every pod loads as long as its own test passes.
		{name: "an operator rule that denies every pod", modules: map[string]string{"deny-all.rego": denyAll, "deny-all_test.rego": denyAllTest},
			wantDeny: []string{"every pod is denied here", quotaDenial}},
		{name: "an operator rule reading the pod's labels", modules: map[string]string{"labels.rego": costCenter},
			wantDeny: []string{"cost-center label required", quotaDenial}},
		{name: "a misspelt input field is a type error naming it", modules: map[string]string{"typo.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if input.namspace == \"a\"\n"},
			wantErr: `override/typo.rego:3: rego_type_error: undefined ref: input.namspace`},
		{name: "a misspelt nested field", modules: map[string]string{"typo.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if input.demand.effectiv.gpu > 1\n"},
			wantErr: `override/typo.rego:3: rego_type_error: undefined ref: input.demand.effectiv.gpu`},
		{name: "a field of the wrong type", modules: map[string]string{"typo.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if input.userInfo.groups.admin\n"},
			wantErr: `override/typo.rego:3: rego_type_error`},
		{name: "syntax error", modules: map[string]string{"bad.rego": "package gpuadmit.admission\n\ndeny contains if {"},
			wantErr: "override/bad.rego:3"},
		{name: "compile error", modules: map[string]string{"bad.rego": "package gpuadmit.admission\n\ndeny contains x if x := data.nowhere.f(1)\n"},
			wantErr: "compiling"},
		{name: "failing policy test blocks activation", modules: map[string]string{"extra.rego": extraPolicy,
			"extra_test.rego": strings.ReplaceAll(extraPolicyTest, `"no pods named forbidden" in`, `"something else" in`)},
			wantErr: "policy tests failed: data.gpuadmit.admission_test.test_forbidden"},
		{name: "replacing an embedded policy breaks its embedded tests", modules: map[string]string{"limits.rego": "package gpuadmit.admission\n"},
			wantErr: "policy tests failed"},
		{name: "replacing an embedded policy and its tests", modules: map[string]string{"limits.rego": "package gpuadmit.admission\n",
			"limits_test.rego": "package gpuadmit.admission_test\n\ntest_nothing if true\n"},
			wantDeny: []string{}},
		{name: "http.send is not available", modules: map[string]string{"net.rego": `package gpuadmit.admission

deny contains r.body.msg if r := http.send({"method": "GET", "url": "http://example.com"})
`}, wantErr: "http.send"},
		{name: "net.* is not available", modules: map[string]string{"net.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if net.lookup_ip_addr(\"example.com\")\n"},
			wantErr: "net.lookup_ip_addr"},
		{name: "opa.runtime is not available", modules: map[string]string{"rt.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if opa.runtime().env.X\n"},
			wantErr: "opa.runtime"},
		{name: "the clock is not available", modules: map[string]string{"clock.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if time.now_ns() > 0\n"},
			wantErr: "time.now_ns"},
		{name: "deny must stay a set", modules: map[string]string{"x.rego": "package gpuadmit.admission\n\ndeny := true\n"},
			wantErr: "compiling policies: override/x.rego:3: data.gpuadmit.admission.deny must be a set of messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logged []string
			e := policy.New(policy.Options{Log: funcr.New(func(prefix, args string) { logged = append(logged, args) }, funcr.Options{})})
			ctx := context.Background()
			if err := e.Load(ctx); err != nil {
				t.Fatal(err)
			}
			good := e.Status()
			err := e.Load(ctx, policy.Map("override", tt.modules))
			st := e.Status()
			out, evalErr := e.Eval(ctx, input(t, "forbidden"))
			if evalErr != nil {
				t.Fatal(evalErr)
			}
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if st.Revision == good.Revision || st.LastError != "" || st.Failures != 0 {
					t.Errorf("status after a good load = %+v", st)
				}
				if !slices.Equal(out.Deny, tt.wantDeny) {
					t.Errorf("deny = %q, want %q", out.Deny, tt.wantDeny)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load error = %v, want it to contain %q", err, tt.wantErr)
			}
			if st.Revision != good.Revision || !strings.Contains(st.LastError, tt.wantErr) || !strings.HasSuffix(err.Error(), st.LastError) ||
				st.Failures != 1 || !st.ActivatedAt.Equal(good.ActivatedAt) || !st.LastAttempt.After(good.LastAttempt) {
				t.Errorf("status after a rejected load = %+v (before: %+v)", st, good)
			}
			if !slices.Equal(out.Deny, []string{quotaDenial}) {
				t.Errorf("the last good set should still answer: deny = %q", out.Deny)
			}
			if !slices.ContainsFunc(logged, func(s string) bool { return strings.Contains(s, "policy set rejected") }) {
				t.Errorf("rejection not logged: %q", logged)
			}
		})
	}
}

func TestReloadDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("extra.rego", "package gpuadmit.admission\n\nwarn contains \"v1\" if input.pod.name == \"p\"\n")
	e := loaded(t, policy.Dir(dir))
	ctx := context.Background()
	steps := []struct {
		name, file, text string
		wantErr          bool
		wantWarn         string
	}{
		{name: "changed", file: "extra.rego", text: "package gpuadmit.admission\n\nwarn contains \"v2\" if input.pod.name == \"p\"\n", wantWarn: "v2"},
		{name: "broken", file: "extra.rego", text: "package gpuadmit.admission\n\nwarn contains \"v3\" if {", wantErr: true, wantWarn: "v2"},
		{name: "fixed", file: "extra.rego", text: "package gpuadmit.admission\n\nwarn contains \"v4\" if input.pod.name == \"p\"\n", wantWarn: "v4"},
	}
	for _, s := range steps {
		write(s.file, s.text)
		err := e.Load(ctx, policy.Dir(dir))
		if (err != nil) != s.wantErr {
			t.Fatalf("%s: Load again: error = %v, want error %v", s.name, err, s.wantErr)
		}
		out, err := e.Eval(ctx, input(t, "p"))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(out.Warn, s.wantWarn) {
			t.Errorf("%s: warn = %q, want %q", s.name, out.Warn, s.wantWarn)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := e.Load(ctx, policy.Dir(dir)); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("Load of a removed directory: %v", err)
	}
}

func TestEvalDeadline(t *testing.T) {
	tests := []struct {
		name    string
		opts    policy.Options
		timeout time.Duration // of the caller's context; 0: none
	}{
		{name: "context deadline", opts: policy.Options{EvalTimeout: -1}, timeout: 50 * time.Millisecond},
		{name: "engine timeout", opts: policy.Options{EvalTimeout: 50 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := policy.New(tt.opts)
			if err := e.Load(context.Background(), policy.Map("slow", map[string]string{"slow.rego": slowPolicy})); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}
			start := time.Now()
			_, err := e.Eval(ctx, input(t, "slow"))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want a deadline error", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("evaluation stopped after %v", d)
			}
			if _, err := e.Eval(context.Background(), input(t, "fast")); err != nil {
				t.Errorf("a fast evaluation after a timeout: %v", err)
			}
		})
	}
}

// TestConcurrentEvalDuringReload evaluates from several goroutines while
// policy sets are swapped (run with -race).
func TestConcurrentEvalDuringReload(t *testing.T) {
	e := loaded(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for range 200 {
				out, err := e.Eval(ctx, input(t, "p"))
				if err == nil && !slices.Contains(out.Deny, quotaDenial) {
					err = errors.New("denial missing")
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range 3 {
		mods := map[string]string{"extra.rego": "package gpuadmit.admission\n\nwarn contains \"w\" if { input.pod.name == \"w\"; " + strings.Repeat("true; ", i) + "true }\n"}
		if err := e.Load(ctx, policy.Map("override", mods)); err != nil {
			t.Error(err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestTestReportsEveryTest(t *testing.T) {
	e := policy.New(policy.Options{Log: logr.Discard()})
	bad := strings.ReplaceAll(extraPolicyTest, `"no pods named forbidden" in`, `"something else" in`)
	rep, err := e.Test(context.Background(), policy.TestOptions{}, policy.Map("override", map[string]string{"extra.rego": extraPolicy, "extra_test.rego": bad}))
	if err != nil {
		t.Fatal(err)
	}
	results := rep.Results
	var failed []string
	for _, r := range results {
		if r.Fail || r.Error != nil {
			failed = append(failed, r.Name)
		}
	}
	if len(results) < 15 || !slices.Equal(failed, []string{"test_forbidden"}) {
		t.Errorf("%d results, failed %q; want the embedded tests passing and test_forbidden failing", len(results), failed)
	}
	if e.Status().Revision != "" {
		t.Error("Test activated a policy set")
	}
}

func TestExplainNamesTheRules(t *testing.T) {
	e := loaded(t, policy.Map("override", map[string]string{"extra.rego": extraPolicy, "extra_test.rego": extraPolicyTest}))
	ctx := context.Background()
	in := input(t, "forbidden")
	out, err := e.Explain(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.Eval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Deny, plain.Deny) || !slices.Equal(out.Warn, plain.Warn) || plain.Origins != nil {
		t.Errorf("Explain = %q / %q, Eval = %q / %q (origins %v)", out.Deny, out.Warn, plain.Deny, plain.Warn, plain.Origins)
	}
	want := map[string][]policy.Origin{
		quotaDenial:               {{Rule: "data.gpuadmit.builtin.deny", File: "embedded/limits.rego", Line: 23}},
		"no pods named forbidden": {{Rule: policy.DenyRule, File: "override/extra.rego", Line: 3}},
	}
	for msg, w := range want {
		if got := out.Origins[msg]; !slices.Equal(got, w) {
			t.Errorf("origins of %q = %v, want %v", msg, got, w)
		}
	}
	if len(out.Origins) != len(want) {
		t.Errorf("origins for %d messages, want %d: %v", len(out.Origins), len(want), out.Origins)
	}
	if s := want[quotaDenial][0].String(); s != "data.gpuadmit.builtin.deny (embedded/limits.rego:23)" {
		t.Errorf("Origin.String() = %q", s)
	}
}

// TestMessagesThatAreNotStrings: a deny message that is not a string (a
// number, an object) is kept in its Rego form, never dropped, and sorted
// with the others, so a pod is never admitted because a rule's message
// has the wrong type.
func TestMessagesThatAreNotStrings(t *testing.T) {
	const odd = `package gpuadmit.admission

deny contains 42 if input.pod.name == "odd"

deny contains {"reason": "odd"} if input.pod.name == "odd"

warn contains ["a", 1] if input.pod.name == "odd"
`
	e := loaded(t, policy.Map("operators", map[string]string{"odd.rego": odd}))
	out, err := e.Eval(context.Background(), input(t, "odd"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"42", quotaDenial, `{"reason": "odd"}`}
	if !slices.Equal(out.Deny, want) || !slices.Equal(out.Warn, []string{`["a", 1]`}) {
		t.Fatalf("deny %q warn %q, want deny %q warn [\"a\", 1]", out.Deny, out.Warn, want)
	}
}
