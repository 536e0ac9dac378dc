package decision

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	oparego "github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/policy"
	"github.com/gpuadmit/gpuadmit/rego"
)

// TestIndexSkipsTheRulesThatCannotFire: on BenchmarkDecide's pod, which
// fits, OPA enters no built-in deny or warn rule (its rule index skips them
// all, on input.guard and the other lists they name first); a pod over its
// namespace's limit enters limits.rego's denial, which then fires.
func TestIndexSkipsTheRulesThatCannotFire(t *testing.T) {
	l := benchLedger(t, 100)
	testns.Known(l, "small")
	l.UpsertQuota(testquota.New("small", "q", map[string]string{"limits.nvidia.com/gpumem": "1000"}))
	d, err := New(nil, l, config.Default(), logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		entered []string // the files of the deny and warn rules entered
	}{
		{name: "fits", pod: benchPod()},
		{name: "over the namespace's limit", pod: testpod.New("big").NS("small").App("c", testpod.GPU(1), testpod.Mem(2048)).Build(),
			entered: []string{"limits.rego"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := d.document(context.Background(), Request{Pod: tt.pod, Operation: "CREATE"})
			if err != nil {
				t.Fatal(err)
			}
			got := enteredRules(t, doc.value(policy.AllReads()))
			if strings.Join(got, ",") != strings.Join(tt.entered, ",") {
				t.Fatalf("entered %v, want %v", got, tt.entered)
			}
		})
	}
}

// enteredRules evaluates the built-in deny and warn on in with OPA's
// tracer and returns the files of the deny and warn rules it entered.
func enteredRules(t *testing.T, in ast.Value) []string {
	t.Helper()
	opts := []func(*oparego.Rego){oparego.Query("x := data.gpuadmit.builtin.deny; y := data.gpuadmit.builtin.warn"), oparego.ParsedInput(in)}
	for n, src := range builtinSources(t) {
		opts = append(opts, oparego.Module(n, src))
	}
	buf := topdown.NewBufferTracer()
	if _, err := oparego.New(append(opts, oparego.QueryTracer(buf))...).Eval(context.Background()); err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, ev := range *buf {
		r, ok := ev.Node.(*ast.Rule)
		if !ok || ev.Op != topdown.EnterOp {
			continue
		}
		if name := r.Head.Name.String(); name == "deny" || name == "warn" {
			files = append(files, r.Location.File)
		}
	}
	return files
}

// TestGuardBuiltOnlyWhenRead: the input carries input.guard when the policy
// set reads it (the built-in rules) and not when it does not (the same
// rules without their guard lines, as an operator's replacements may be).
func TestGuardBuiltOnlyWhenRead(t *testing.T) {
	l := benchLedger(t, 10)
	tests := []struct {
		name string
		base fs.FS
		want bool
	}{
		{name: "built-in rules", want: true},
		{name: "rules without guards", base: unguarded(t), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := policy.New(policy.Options{Base: tt.base})
			if err := e.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			p, err := e.Prepare()
			if err != nil {
				t.Fatal(err)
			}
			d, err := New(e, l, config.Default(), logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			doc, err := d.document(context.Background(), Request{Pod: benchPod(), Operation: "CREATE"})
			if err != nil {
				t.Fatal(err)
			}
			in, ok := doc.value(p.Reads()).(ast.Object)
			if !ok {
				t.Fatal("the input is not an object")
			}
			if got := in.Get(ast.InternedTerm("guard")) != nil; got != tt.want || p.Reads().Has("guard") != tt.want {
				t.Fatalf("input.guard present %v, read %v; want %v", got, p.Reads().Has("guard"), tt.want)
			}
		})
	}
}

// TestEveryBuiltinRuleStartsQuiet proves input.guard.quiet sound on the
// embedded files: every built-in deny and warn rule starts with
// input.guard.quiet == false and then R[0], R one of the guard's lists or
// of starts, so that when quiet is true (every such R empty or absent:
// startsEmpty and the guard's lists) no rule could have fired. Every entry
// of starts is some rule's R: the summary names no list in vain.
func TestEveryBuiltinRuleStartsQuiet(t *testing.T) {
	quiet := ast.MustParseExpr("input.guard.quiet == false")
	allowed := map[string]bool{}
	for _, k := range guardKeys {
		allowed["guard."+k] = true
	}
	for _, p := range starts {
		allowed[strings.Join(p, ".")] = false
	}
	rules := 0
	for _, m := range builtinModules(t) {
		for _, r := range m.Rules {
			if name := r.Head.Name.String(); name != "deny" && name != "warn" {
				continue
			}
			rules++
			at := fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
			if len(r.Body) < 2 || !r.Body[0].Equal(quiet) {
				t.Errorf("%s: the rule does not start with %v", at, quiet)
				continue
			}
			path, ok := firstElement(r.Body[1])
			if _, known := allowed[path]; !ok || !known {
				t.Errorf("%s: the rule's second expression %v is not R[0] of a list the input's quiet summarizes", at, r.Body[1])
				continue
			}
			allowed[path] = true
		}
	}
	if rules < 17 {
		t.Errorf("found %d deny and warn rules, want at least 17", rules)
	}
	for p, used := range allowed {
		if !used && !strings.HasPrefix(p, "guard.") {
			t.Errorf("starts names %s, which no built-in rule starts from", p)
		}
	}
}

// firstElement is "a.b" for the expression input.a.b[0].
func firstElement(e *ast.Expr) (string, bool) {
	ref, ok := e.Terms.(*ast.Term)
	if !ok || e.Negated {
		return "", false
	}
	r, ok := ref.Value.(ast.Ref)
	if !ok || len(r) < 3 || !r.HasPrefix(ast.InputRootRef) || !r[len(r)-1].Equal(ast.InternedTerm(0)) {
		return "", false
	}
	keys := make([]string, 0, len(r)-2)
	for _, k := range r[1 : len(r)-1] {
		s, ok := k.Value.(ast.String)
		if !ok {
			return "", false
		}
		keys = append(keys, string(s))
	}
	return strings.Join(keys, "."), true
}

// builtinModules parses the embedded built-in rule files.
func builtinModules(t *testing.T) []*ast.Module {
	t.Helper()
	var mods []*ast.Module
	for n, src := range builtinSources(t) {
		m, err := ast.ParseModuleWithOpts(n, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, m)
	}
	return mods
}

// builtinSources are the embedded built-in rule files (not their tests),
// by name.
func builtinSources(t testing.TB) map[string]string {
	t.Helper()
	entries, err := fs.ReadDir(rego.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".rego") || strings.HasSuffix(n, "_test.rego") {
			continue
		}
		src, err := fs.ReadFile(rego.FS, n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(src)
	}
	return out
}
