package policy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Packages and rules the admission query reads. The built-in rules live in
// their own package, apart from operators' rules, so that an operator's rule
// never changes what the built-in tests see (as Gatekeeper keeps each
// template apart); the query takes the union of both packages' messages.
const (
	Package        = "data.gpuadmit.admission"
	DenyRule       = Package + ".deny"
	WarnRule       = Package + ".warn"
	BuiltinPackage = "data.gpuadmit.builtin"
)

// module is one Rego module of a policy set.
type module struct {
	path   string // relative to its source: the key overrides replace by
	file   string // source name + path, used in messages
	text   string
	parsed *ast.Module
}

func (m *module) test() bool { return strings.HasSuffix(m.path, "_test.rego") }

// policySet is a compiled, tested policy set with its compiled admission
// query, evaluated by topdown directly (see Engine.eval).
type policySet struct {
	revision string
	modules  []string // file names, sorted
	tests    int
	compiler *ast.Compiler
	query    ast.Body
	// reads is what the rules read of the input.
	reads *Reads
	// store is empty: the policies read only their input (a store is what
	// topdown reads data documents other than the rules from).
	store storage.Store
}

// collect reads the sources in order; later modules replace earlier ones
// with the same path.
func collect(ctx context.Context, sources []Source) ([]*module, error) {
	byPath := map[string]*module{}
	for _, s := range sources {
		mods, err := s.Modules(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: source %s: %w", ErrRead, s.Name(), err)
		}
		for p, text := range mods {
			byPath[p] = &module{path: p, file: s.Name() + "/" + p, text: text}
		}
	}
	out := make([]*module, 0, len(byPath))
	for _, m := range byPath {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *module) int { return cmp.Compare(a.path, b.path) })
	return out, nil
}

// parse parses every module as Rego v1.
func parse(mods []*module, caps *ast.Capabilities) error {
	var errs ast.Errors
	for _, m := range mods {
		pm, err := ast.ParseModuleWithOpts(m.file, m.text, ast.ParserOptions{RegoVersion: ast.RegoV1, Capabilities: caps})
		if err != nil {
			var ae ast.Errors
			if errors.As(err, &ae) {
				errs = append(errs, ae...)
				continue
			}
			return fmt.Errorf("parsing %s: %w", m.file, err)
		}
		m.parsed = pm
	}
	if len(errs) > 0 {
		return fmt.Errorf("parsing policies: %w", errs)
	}
	return nil
}

func revisionOf(mods []*module) string {
	h := sha256.New()
	for _, m := range mods {
		fmt.Fprintf(h, "%s\x00%d\x00%s\x00", m.path, len(m.text), m.text)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// compilerFor is the compiler of every policy set: Rego v1, the engine's
// capabilities, and the input document's schema (a reference to a field the
// input does not have is a type error).
func compilerFor(caps *ast.Capabilities, schemas *ast.SchemaSet) *ast.Compiler {
	return ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1).WithSchemas(schemas)
}

// testRun configures runTests.
type testRun struct {
	caps    *ast.Capabilities
	schemas *ast.SchemaSet
	timeout time.Duration
	// memoryBudget bounds the live heap's growth while the tests run
	// (watchMemory); 0 means unbounded.
	memoryBudget uint64
	// trace records evaluation traces (failure lines); coverage records
	// which lines the tests evaluated.
	trace    bool
	coverage bool
	// filter, when set, is the regular expression of the tests run (as
	// 'opa test --run'), matched against data.PACKAGE.TEST.
	filter string
}

// runTests runs the test rules of mods (all modules compiled together) and
// returns every result, with a coverage report when asked.
func runTests(ctx context.Context, mods []*module, run testRun) (*TestReport, error) {
	parsed := make(map[string]*ast.Module, len(mods))
	for _, m := range mods {
		parsed[m.file] = m.parsed
	}
	r := tester.NewRunner().SetCompiler(compilerFor(run.caps, run.schemas)).SetModules(parsed).SetTimeout(run.timeout).
		SetDefaultRegoVersion(ast.RegoV1).CapturePrintOutput(true).RaiseBuiltinErrors(true).EnableTracing(run.trace)
	if run.filter != "" {
		r = r.Filter(run.filter)
	}
	var cov *cover.Cover
	if run.coverage {
		cov = cover.New()
		r.SetCoverageQueryTracer(cov)
	}
	rep := &TestReport{}
	err := watchMemory(ctx, run.memoryBudget, memoryPoll, func(ctx context.Context) error {
		ch, err := r.RunTests(ctx, nil)
		if err != nil {
			return fmt.Errorf("compiling policies and tests: %w", err)
		}
		for res := range ch {
			rep.Results = append(rep.Results, res)
		}
		return nil
	})
	if errors.Is(err, ErrMemoryBudget) {
		// The tests still running were cancelled: they are the ones that
		// allocated (or ran beside the one that did).
		return nil, fmt.Errorf("%w; tests cut short: %s", err, failed(rep.Results))
	}
	if err != nil {
		return nil, err
	}
	slices.SortFunc(rep.Results, func(a, b *tester.Result) int {
		return cmp.Or(cmp.Compare(a.Location.File, b.Location.File), cmp.Compare(a.Location.Row, b.Location.Row))
	})
	if cov != nil {
		policies := map[string]*ast.Module{}
		for _, m := range mods {
			if !m.test() {
				policies[m.file] = m.parsed
			}
		}
		rep.Coverage = policyCoverage(cov.Report(policies), policies)
	}
	return rep, nil
}

// timedOut says that every failing test of results failed only by running
// past the test time limit (cancelled while ctx, the load's, was not): a
// set whose only failures are timeouts may pass on a less loaded CPU, a
// set with a test that fails on its own is rejected for good.
func timedOut(ctx context.Context, results []*tester.Result) bool {
	if ctx.Err() != nil {
		return false
	}
	slow := false
	for _, r := range results {
		switch {
		case r.Error != nil && (topdown.IsCancel(r.Error) || errors.Is(r.Error, context.DeadlineExceeded)):
			slow = true
		case r.Error != nil || r.Fail:
			return false
		}
	}
	return slow
}

// failed summarizes failing tests ("" when all pass).
func failed(results []*tester.Result) string {
	var bad []string
	for _, r := range results {
		switch {
		case r.Error != nil:
			bad = append(bad, fmt.Sprintf("%s.%s: error: %v", r.Package, r.Name, r.Error))
		case r.Fail:
			bad = append(bad, fmt.Sprintf("%s.%s (%s:%d): failed", r.Package, r.Name, r.Location.File, r.Location.Row))
		}
	}
	return strings.Join(bad, "; ")
}

// build reads, parses, compiles and tests a policy set and prepares its query.
func build(ctx context.Context, sources []Source, run testRun) (*policySet, error) {
	mods, err := collect(ctx, sources)
	if err != nil {
		return nil, err
	}
	if err := parse(mods, run.caps); err != nil {
		return nil, err
	}
	rep, err := runTests(ctx, mods, run)
	if err != nil {
		return nil, err
	}
	if f := failed(rep.Results); f != "" {
		if timedOut(ctx, rep.Results) {
			return nil, fmt.Errorf("policy tests failed: %w: %s", ErrTestTimeout, f)
		}
		return nil, fmt.Errorf("policy tests failed: %s", f)
	}
	set := &policySet{revision: revisionOf(mods), tests: len(rep.Results)}
	policies := map[string]*ast.Module{}
	builtin := map[string]bool{}
	for _, m := range mods {
		set.modules = append(set.modules, m.file)
		if !m.test() {
			policies[m.file] = m.parsed
			builtin[m.file] = isBuiltin(m)
		}
	}
	compiler := compilerFor(run.caps, run.schemas)
	if compiler.Compile(policies); compiler.Failed() {
		return nil, fmt.Errorf("compiling policies: %w", compiler.Errors)
	}
	query, err := admissionQuery(compiler)
	if err != nil {
		return nil, err
	}
	body, err := ast.ParseBodyWithOpts(query, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		return nil, fmt.Errorf("preparing the admission query: %w", err)
	}
	if set.query, err = compiler.QueryCompiler().WithStrict(false).Compile(body); err != nil {
		return nil, fmt.Errorf("preparing the admission query: %w", err)
	}
	set.compiler, set.store, set.reads = compiler, inmem.New(), readsOf(compiler.Modules, func(name string) bool { return builtin[name] })
	return set, nil
}

// admissionQuery binds deny and warn to the union of the built-in and the
// operators' rules of each name, of those some module defines.
func admissionQuery(compiler *ast.Compiler) (string, error) {
	var bindings []string
	for _, name := range []string{"deny", "warn"} {
		var refs []string
		for _, pkg := range []string{BuiltinPackage, Package} {
			ref := pkg + "." + name
			rules := compiler.GetRulesExact(ast.MustParseRef(ref))
			for _, r := range rules {
				if r.Head.RuleKind() != ast.MultiValue {
					return "", fmt.Errorf("compiling policies: %s:%d: %s must be a set of messages (%s contains msg if { ... })",
						r.Location.File, r.Location.Row, ref, name)
				}
			}
			if len(rules) > 0 {
				refs = append(refs, ref)
			}
		}
		if len(refs) == 0 {
			return "", fmt.Errorf("compiling policies: no module defines %s.%s or %s.%s", Package, name, BuiltinPackage, name)
		}
		// = rather than :=, so that the compiled query binds the names
		// themselves (:= declares them under generated names).
		bindings = append(bindings, name+" = "+strings.Join(refs, " | "))
	}
	return strings.Join(bindings, "; "), nil
}

// policyCoverage keeps the files of policies (the tests cover themselves)
// and recomputes the totals over them.
func policyCoverage(r cover.Report, policies map[string]*ast.Module) *cover.Report {
	out := &cover.Report{Files: map[string]*cover.FileReport{}}
	for file, f := range r.Files {
		if _, ok := policies[file]; !ok {
			continue
		}
		out.Files[file] = f
		out.CoveredLines += f.CoveredLines
		out.NotCoveredLines += f.NotCoveredLines
	}
	if n := out.CoveredLines + out.NotCoveredLines; n > 0 {
		out.Coverage = math.Round(float64(out.CoveredLines)*1000/float64(n)) / 10
	}
	return out
}
