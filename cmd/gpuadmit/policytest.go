package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"slices"

	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/gpuadmit/gpuadmit/policy"
)

const policyUsage = "usage: gpuadmit policy test [DIR]"

// runPolicy runs `gpuadmit policy test [DIR]`: the Rego unit tests of the
// embedded policies, plus DIR's modules loaded as the engine loads them
// (same file name replaces, others are added). Exit 0 all pass, 1 a test
// failed, 2 the policies could not be read or compiled.
func runPolicy(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "test" {
		return fail(stderr, "policy", errors.New(policyUsage))
	}
	fs := flag.NewFlagSet("gpuadmit policy test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 1 {
		return fail(stderr, "policy test", errors.New(policyUsage))
	}
	var overrides []policy.Source
	if fs.NArg() == 1 {
		overrides = append(overrides, policy.Dir(fs.Arg(0)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), evalTimeout)
	defer cancel()
	results, err := policy.New(policy.Options{}).Test(ctx, overrides...)
	if err != nil {
		return fail(stderr, "policy test", err)
	}
	ch := make(chan *tester.Result, len(results))
	ok := true
	for _, r := range results {
		ok = ok && r.Pass()
		r.Trace = failingEvent(r.Trace)
		ch <- r
	}
	close(ch)
	if err := (tester.PrettyReporter{Output: stdout, Verbose: true, FailureLine: true}).Report(ch); err != nil {
		return fail(stderr, "policy test", err)
	}
	if !ok {
		return 1
	}
	return 0
}

// failingEvent keeps, of a test's trace, the expression that failed (what
// `opa test` prints as the failure line) rather than the whole trace.
func failingEvent(trace []*topdown.Event) []*topdown.Event {
	for _, e := range slices.Backward(trace) {
		if e.Op == topdown.FailOp && e.Location != nil && e.QueryID != 0 {
			return []*topdown.Event{e}
		}
	}
	return nil
}
