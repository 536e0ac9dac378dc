package policy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/tester"
)

// Package and rules the admission query reads.
const (
	Package  = "data.gpuadmit.admission"
	DenyRule = Package + ".deny"
	WarnRule = Package + ".warn"
)

// module is one Rego module of a policy set.
type module struct {
	path   string // relative to its source: the key overrides replace by
	file   string // source name + path, used in messages
	text   string
	parsed *ast.Module
}

func (m *module) test() bool { return strings.HasSuffix(m.path, "_test.rego") }

// policySet is a compiled, tested policy set with its prepared query.
type policySet struct {
	revision string
	modules  []string // file names, sorted
	tests    int
	query    rego.PreparedEvalQuery
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

// runTests runs the test rules of mods (all modules compiled together) and
// returns every result; trace records evaluation traces (failure lines).
func runTests(ctx context.Context, mods []*module, caps *ast.Capabilities, timeout time.Duration, trace bool) ([]*tester.Result, error) {
	parsed := make(map[string]*ast.Module, len(mods))
	for _, m := range mods {
		parsed[m.file] = m.parsed
	}
	compiler := ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1)
	r := tester.NewRunner().SetCompiler(compiler).SetModules(parsed).SetTimeout(timeout).
		SetDefaultRegoVersion(ast.RegoV1).CapturePrintOutput(true).RaiseBuiltinErrors(true).EnableTracing(trace)
	ch, err := r.RunTests(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("compiling policies and tests: %w", err)
	}
	var results []*tester.Result
	for res := range ch {
		results = append(results, res)
	}
	slices.SortFunc(results, func(a, b *tester.Result) int {
		return cmp.Or(cmp.Compare(a.Location.File, b.Location.File), cmp.Compare(a.Location.Row, b.Location.Row))
	})
	return results, nil
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
func build(ctx context.Context, sources []Source, caps *ast.Capabilities, testTimeout time.Duration) (*policySet, error) {
	mods, err := collect(ctx, sources)
	if err != nil {
		return nil, err
	}
	if err := parse(mods, caps); err != nil {
		return nil, err
	}
	results, err := runTests(ctx, mods, caps, testTimeout, false)
	if err != nil {
		return nil, err
	}
	if f := failed(results); f != "" {
		return nil, fmt.Errorf("policy tests failed: %s", f)
	}
	set := &policySet{revision: revisionOf(mods), tests: len(results)}
	policies := map[string]*ast.Module{}
	for _, m := range mods {
		set.modules = append(set.modules, m.file)
		if !m.test() {
			policies[m.file] = m.parsed
		}
	}
	compiler := ast.NewCompiler().WithCapabilities(caps).WithDefaultRegoVersion(ast.RegoV1)
	if compiler.Compile(policies); compiler.Failed() {
		return nil, fmt.Errorf("compiling policies: %w", compiler.Errors)
	}
	for _, rule := range []string{DenyRule, WarnRule} {
		if len(compiler.GetRulesExact(ast.MustParseRef(rule))) == 0 {
			return nil, fmt.Errorf("compiling policies: no module defines %s", rule)
		}
	}
	set.query, err = rego.New(
		rego.Query(fmt.Sprintf("deny := %s; warn := %s", DenyRule, WarnRule)),
		rego.Compiler(compiler),
		rego.Capabilities(caps),
	).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the admission query: %w", err)
	}
	return set, nil
}
