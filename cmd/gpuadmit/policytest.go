package main

import (
	"context"
	"slices"

	"github.com/spf13/cobra"

	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"

	"github.com/gpuadmit/gpuadmit/policy"
)

func (c *cli) policyCmd() *cobra.Command {
	policyCmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with the Rego policies",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("usage: %s", cmd.Commands()[0].UseLine())
		},
	}
	test := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Run the Rego unit tests of the policies",
		Long: `Run the Rego unit tests of the embedded policies, plus DIR's modules loaded
as the webhook loads them (a file of the same name replaces an embedded
one, others are added). Exits 1 when a test fails.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("usage: %s", cmd.UseLine())
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error { return c.policyTest(cmd.Context(), args) },
	}
	policyCmd.AddCommand(test)
	return policyCmd
}

// policyTest runs `gpuadmit policy test [DIR]`: the Rego unit tests of the
// embedded policies, plus DIR's modules loaded as the engine loads them
// (same file name replaces, others are added). Exit 0 all pass, 1 a test
// failed, 2 the policies could not be read or compiled.
func (c *cli) policyTest(ctx context.Context, args []string) error {
	var overrides []policy.Source
	if len(args) == 1 {
		overrides = append(overrides, policy.Dir(args[0]))
	}
	ctx, cancel := context.WithTimeout(ctx, evalTimeout)
	defer cancel()
	results, err := policy.New(policy.Options{}).Test(ctx, overrides...)
	if err != nil {
		return err
	}
	ch := make(chan *tester.Result, len(results))
	ok := true
	for _, r := range results {
		ok = ok && r.Pass()
		r.Trace = failingEvent(r.Trace)
		ch <- r
	}
	close(ch)
	if err := (tester.PrettyReporter{Output: c.stdout, Verbose: true, FailureLine: true}).Report(ch); err != nil {
		return err
	}
	if !ok {
		return exitCode(1)
	}
	return nil
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
