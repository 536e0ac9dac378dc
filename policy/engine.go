package policy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"

	defaults "github.com/gpuadmit/gpuadmit/rego"
)

// Errors of the engine.
var (
	// ErrNoPolicy is returned by Eval before any policy set was activated.
	ErrNoPolicy = errors.New("no policy set is active")
	// ErrRead wraps a failure to read a policy source (a directory, a
	// ConfigMap list): the set was never built, so nothing about it was
	// rejected; the caller retries.
	ErrRead = errors.New("reading the policy sources")
	// ErrTestTimeout: a set was rejected only because tests ran past the
	// test time limit (Options.TestTimeout), which CPU load can cause (a
	// replica starting beside others): the caller may retry the load.
	ErrTestTimeout = errors.New("policy tests ran past their time limit")
)

// Options configure an Engine.
type Options struct {
	// Log receives activations and rejected policy sets. The zero value discards.
	Log logr.Logger
	// Base is the built-in policy set (policies and tests); nil uses the
	// embedded default policies.
	Base fs.FS
	// EvalTimeout bounds one evaluation when the context has no earlier
	// deadline; 0 means 1 s, negative means only the context's deadline.
	EvalTimeout time.Duration
	// TestTimeout bounds each policy test; 0 means 5 s.
	TestTimeout time.Duration
	// MemoryBudget bounds how much the process's live heap may grow while
	// the tests of a set being loaded run (see watchMemory; past it the run
	// stops and the set is rejected) and while an evaluation that runs
	// longer than slowEval runs (watchEval; past it the evaluation fails).
	// 0 means DefaultMemoryBudget, negative unbounded. Test, which keeps
	// traces, is not bounded.
	MemoryBudget int64
	// Now tells the time for Status; nil uses time.Now.
	Now func() time.Time
}

// Status describes the active policy set and the last load attempt. A
// server exposes it as metrics (active revision, last error, reload times).
type Status struct {
	// Revision identifies the active set (a hash of its modules); "" when none is active.
	Revision string `json:"revision"`
	// Modules are the active set's module files; Tests the number of its tests.
	Modules []string `json:"modules,omitempty"`
	Tests   int      `json:"tests"`
	// ActivatedAt is when the active set was activated.
	ActivatedAt time.Time `json:"activatedAt,omitzero"`
	// LastAttempt is when a set was last loaded, successfully or not.
	LastAttempt time.Time `json:"lastAttempt,omitzero"`
	// LastError is why the last load failed; "" when it succeeded.
	LastError string `json:"lastError,omitempty"`
	// Failures counts rejected policy sets since the engine started.
	Failures int `json:"failures"`
}

// Output is what the policies said about one admission request.
type Output struct {
	Deny []string
	Warn []string
	// Origins are, for each message, the rules that produced it, innermost
	// first; set by Explain only.
	Origins map[string][]Origin
}

// Engine holds the active policy set. Eval is safe for concurrent use and
// never blocks on a load; loads are serialized.
type Engine struct {
	log         logr.Logger
	base        fs.FS
	evalTimeout time.Duration
	testTimeout time.Duration
	memBudget   uint64
	gc          *gcGate // the collections watched evaluations force
	now         func() time.Time
	caps        *ast.Capabilities
	schemas     *ast.SchemaSet
	schemaErr   error // the embedded schema does not parse: nothing loads

	active atomic.Pointer[policySet]

	loadMu sync.Mutex // serializes Load

	statusMu sync.Mutex
	status   Status
}

// New returns an engine with no active policy set: call Load.
func New(opts Options) *Engine {
	e := &Engine{log: opts.Log, base: opts.Base, evalTimeout: opts.EvalTimeout, testTimeout: opts.TestTimeout,
		now: opts.Now, caps: capabilities()}
	e.schemas, e.schemaErr = schemaSet()
	if e.base == nil {
		e.base = defaults.FS
	}
	if e.evalTimeout == 0 {
		e.evalTimeout = time.Second
	}
	switch {
	case opts.MemoryBudget == 0:
		e.memBudget = DefaultMemoryBudget
	case opts.MemoryBudget > 0:
		e.memBudget = uint64(opts.MemoryBudget)
	}
	if e.testTimeout <= 0 {
		e.testTimeout = 5 * time.Second
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.gc = &gcGate{now: time.Now, gc: runtime.GC}
	return e
}

func (e *Engine) allSources(overrides []Source) []Source {
	return append([]Source{FS("embedded", e.base)}, overrides...)
}

func (e *Engine) testRun(trace, coverage bool) testRun {
	run := testRun{caps: e.caps, schemas: e.schemas, timeout: e.testTimeout, trace: trace, coverage: coverage}
	if !trace {
		// A traced run (Test: gpuadmit policy test, on the operator's
		// machine) keeps every test's trace until the end, so its heap
		// grows with the number of tests; the webhook's runs are untraced.
		run.memoryBudget = e.memBudget
	}
	return run
}

// Load builds a policy set from the built-in policies and overrides (in
// order), runs its tests and activates it. On any failure the active set
// stays in force; the error is returned, logged and kept in Status.
// Loading the same sources again re-reads them (a directory whose files
// changed, say).
func (e *Engine) Load(ctx context.Context, overrides ...Source) error {
	e.loadMu.Lock()
	defer e.loadMu.Unlock()
	var set *policySet
	err := e.schemaErr
	if err == nil {
		set, err = build(ctx, e.allSources(overrides), e.testRun(false, false))
	}
	now := e.now()
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	e.status.LastAttempt = now
	if err != nil {
		e.status.LastError = err.Error()
		e.status.Failures++
		e.log.Error(err, "policy set rejected; the active policy set stays in force", "active", e.status.Revision)
		if e.status.Revision == "" {
			return fmt.Errorf("policy set rejected (no policy set is active): %w", err)
		}
		return fmt.Errorf("policy set rejected (active revision %s stays in force): %w", e.status.Revision, err)
	}
	e.active.Store(set)
	e.status.Revision, e.status.Modules, e.status.Tests = set.revision, set.modules, set.tests
	e.status.ActivatedAt, e.status.LastError = now, ""
	e.log.Info("policy set activated", "revision", set.revision, "modules", len(set.modules), "tests", set.tests)
	return nil
}

// Reject records that a set the caller wanted could not be activated for
// a reason outside Load (the set of record it would fall back to is absent,
// say): err becomes Status.LastError and counts as a failure. The active
// set, if any, stays.
func (e *Engine) Reject(err error) {
	now := e.now()
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	e.status.LastAttempt, e.status.LastError = now, err.Error()
	e.status.Failures++
	e.log.Error(err, "policy set rejected; the active policy set stays in force", "active", e.status.Revision)
}

// Status returns the engine's status.
func (e *Engine) Status() Status {
	e.statusMu.Lock()
	defer e.statusMu.Unlock()
	s := e.status
	s.Modules = slices.Clone(s.Modules)
	return s
}

// TestOptions configure Test.
type TestOptions struct {
	// Coverage reports which lines of the policies (not the tests) the
	// tests evaluated, as `opa test --coverage` does.
	Coverage bool
	// Run is the regular expression of the tests run, as 'opa test
	// --run': matched against data.PACKAGE.TEST; "" runs every test.
	Run string
}

// TestReport is what Test found.
type TestReport struct {
	// Results of every test, by file and line, with traces.
	Results []*tester.Result
	// Coverage is set when TestOptions.Coverage is.
	Coverage *cover.Report
}

// Test builds the policy set Load would build from overrides, without
// activating it, and returns the results of its tests, with traces (as
// `opa test -v`: failing expressions are known). The error reports
// sources that cannot be read, parsed or compiled (type errors against the
// input schema included).
func (e *Engine) Test(ctx context.Context, opts TestOptions, overrides ...Source) (*TestReport, error) {
	if e.schemaErr != nil {
		return nil, e.schemaErr
	}
	mods, err := collect(ctx, e.allSources(overrides))
	if err != nil {
		return nil, err
	}
	if err := parse(mods, e.caps); err != nil {
		return nil, err
	}
	run := e.testRun(true, opts.Coverage)
	run.filter = opts.Run
	return runTests(ctx, mods, run)
}

// Eval evaluates the active policy set on input (a PolicyInput document).
// It stops at the context's deadline or after the engine's EvalTimeout.
func (e *Engine) Eval(ctx context.Context, input ast.Value) (Output, error) {
	p, err := e.Prepare()
	if err != nil {
		return Output{}, err
	}
	return p.Eval(ctx, input)
}

// Prepared is one policy set ready to evaluate: what its rules read of the
// input, and its evaluation. A caller that builds the input for what a set
// reads evaluates it with the same Prepared, whatever set is activated
// meanwhile.
type Prepared struct {
	e   *Engine
	set *policySet
}

// Prepare returns the active policy set (ErrNoPolicy before any).
func (e *Engine) Prepare() (*Prepared, error) {
	set := e.active.Load()
	if set == nil {
		return nil, ErrNoPolicy
	}
	return &Prepared{e: e, set: set}, nil
}

// Reads is what the set's rules can read of the input.
func (p *Prepared) Reads() *Reads { return p.set.reads }

// Eval evaluates the set on input, as Engine.Eval.
func (p *Prepared) Eval(ctx context.Context, input ast.Value) (Output, error) {
	return p.e.eval(ctx, p.set, input, nil)
}

// Explain evaluates the set on input, as Engine.Explain.
func (p *Prepared) Explain(ctx context.Context, input ast.Value) (Output, error) {
	return p.e.explain(ctx, p.set, input)
}

// eval evaluates set, tracing into tracer when it is not nil.
func (e *Engine) eval(ctx context.Context, set *policySet, input ast.Value, tracer topdown.QueryTracer) (Output, error) {
	// Cancel through context.AfterFunc and a timer rather than a context
	// and OPA's goroutine per evaluation.
	cancel := topdown.NewCancel()
	stop := context.AfterFunc(ctx, cancel.Cancel)
	defer stop()
	st := &evalState{e: e, cancel: cancel}
	if t := st.bound(); t != nil {
		defer t.Stop()
	}
	deny, warn, err := set.run(ctx, input, cancel, tracer)
	st.done.Store(true)
	switch {
	case err == nil:
	case ctx.Err() != nil: // OPA's own error only repeats it
		return Output{}, fmt.Errorf("evaluating policy set %s: %w", set.revision, ctx.Err())
	case st.overBudget.Load():
		return Output{}, fmt.Errorf("evaluating policy set %s: %w: the live heap grew by %.1f MiB, over the budget of %.1f MiB",
			set.revision, ErrEvalMemoryBudget, float64(st.peak)/(1<<20), float64(e.memBudget)/(1<<20))
	case st.timedOut.Load():
		return Output{}, fmt.Errorf("evaluating policy set %s: ran past its %s: %w", set.revision, e.evalTimeout, context.DeadlineExceeded)
	default:
		return Output{}, fmt.Errorf("evaluating policy set %s: %w", set.revision, err)
	}
	return Output{Deny: deny, Warn: warn}, nil
}

// run evaluates the set's admission query on input with topdown directly
// (what rego.PreparedEvalQuery.Eval does, without converting its results to
// Go values and back).
func (set *policySet) run(ctx context.Context, input ast.Value, cancel topdown.Cancel, tracer topdown.QueryTracer) (deny, warn []string, err error) {
	txn, err := set.store.NewTransaction(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer set.store.Abort(ctx, txn)
	q := topdown.NewQuery(set.query).WithCompiler(set.compiler).WithStore(set.store).WithTransaction(txn).
		WithInput(ast.NewTerm(input)).WithCancel(cancel).WithEarlyExit(true).WithIndexing(true).WithTime(time.Now()).WithMetrics(metrics.NoOp()).
		WithVirtualCache(&smallCache{})
	if tracer != nil {
		q = q.WithQueryTracer(tracer)
	}
	results := 0
	var okDeny, okWarn bool
	err = q.Iter(ctx, func(qr topdown.QueryResult) error {
		results++
		deny, okDeny = messages(qr[ast.Var("deny")])
		warn, okWarn = messages(qr[ast.Var("warn")])
		return nil
	})
	switch {
	case err != nil:
		return nil, nil, err
	case results != 1:
		return nil, nil, errors.New("deny or warn is undefined")
	case !okDeny || !okWarn:
		return nil, nil, errors.New("deny and warn must be sets of messages")
	}
	return deny, warn, nil
}

// messages converts a set of messages to sorted strings; a message that is
// not a string is kept in its printed form, never dropped.
func messages(t *ast.Term) ([]string, bool) {
	if t == nil {
		return nil, false
	}
	set, ok := t.Value.(ast.Set)
	if !ok {
		return nil, false
	}
	out := make([]string, 0, set.Len())
	set.Foreach(func(m *ast.Term) {
		if s, ok := m.Value.(ast.String); ok {
			out = append(out, string(s))
		} else {
			out = append(out, m.String())
		}
	})
	slices.Sort(out)
	return out, true
}
