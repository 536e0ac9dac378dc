package policy

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/eval"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/policy"
)

// NewCmd is the `gpuadmit policy` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	policyCmd := &cobra.Command{
		Use:   "policy",
		Short: "Work with the Rego policies",
		Args:  cmdline.UnknownCommand,
	}
	var schemaFormat string
	test := testCmd(c)
	schema := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the policies' input document",
		Long: `Print the JSON Schema every policy set is type-checked against
(docs/policy-input.md), for editors and other tools.`,
		Args: cmdline.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			o, err := output.Parse(schemaFormat, output.DataFormats)
			if err != nil {
				return err
			}
			return o.WriteData(c.Stdout, policy.InputSchema())
		},
	}
	output.Flag(schema, &schemaFormat, output.FormatJSON, output.DataFormats)
	verify := verifyCmd(c)
	policyCmd.AddCommand(test, verify, schema)
	policyCmd.RunE = func(*cobra.Command, []string) error {
		return cmdline.UsageErrorf("usage: %s; %s; %s", test.UseLine(), verify.UseLine(), schema.UseLine())
	}
	return policyCmd
}

// testCmd is `gpuadmit policy test`.
func testCmd(c *cmdline.CLI) *cobra.Command {
	var to testOptions
	var testFormat string
	test := &cobra.Command{
		Use:   "test [DIR] [--run REGEX] [--coverage] [--explain] [-o json|yaml|jsonpath=TEMPLATE]",
		Short: "Run the Rego unit tests of the policies",
		Long: `Run the Rego unit tests of the embedded policies, plus DIR's modules loaded
as the webhook loads them (a file of the same name replaces an embedded
one, others are added). Exits 1 when a test fails. --coverage then reports,
per policy file, the share of its lines the tests evaluated and the lines
they never reached (as 'opa test --coverage'). --run runs only the tests
whose name (data.PACKAGE.TEST) the regular expression matches, as 'opa
test --run'. -o json prints 'opa test --format=json''s report: a failing
test with the expression that failed, a passing one without a trace
(--explain: with the last expression that failed in it too).`,
		Example: `  gpuadmit policy test
  gpuadmit policy test examples/policy --run 'gpu_tier'
  gpuadmit policy test examples/policy -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return cmdline.UsageErrorf("usage: %s", cmd.UseLine())
			}
			return nil
		},
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveFilterDirs
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := output.TextOr(testFormat, output.DataFormats)
			if err != nil {
				return err
			}
			if to.coverage && o.Format != "" {
				return cmdline.UsageErrorf("--coverage reports in text: use it without -o")
			}
			if _, err := regexp.Compile(to.run); err != nil {
				return cmdline.UsageErrorf("--run %q: %v", to.run, err)
			}
			return policyTest(cmd.Context(), c, args, to, o)
		},
	}
	test.Flags().BoolVar(&to.coverage, "coverage", false, "report which lines of the policies the tests evaluated")
	test.Flags().StringVar(&to.run, "run", "", "run only the tests whose name (data.PACKAGE.TEST) this regular expression matches, as 'opa test --run'")
	test.Flags().BoolVar(&to.explain, "explain", false, "give passing tests too the last expression that failed in them (their trace), as failing tests have it")
	output.Flag(test, &testFormat, "", output.DataFormats)
	return test
}

// policyTest runs `gpuadmit policy test [DIR]`: the Rego unit tests of the
// embedded policies, plus DIR's modules loaded as the engine loads them
// (same file name replaces, others are added). Exit 0 all pass, 1 a test
// failed, 2 the policies could not be read or compiled.
func policyTest(ctx context.Context, c *cmdline.CLI, args []string, to testOptions, o output.Output) error {
	var overrides []policy.Source
	if len(args) == 1 {
		overrides = append(overrides, policy.Dir(args[0]))
	}
	ctx, cancel := context.WithTimeout(ctx, eval.Timeout)
	defer cancel()
	rep, err := policy.New(policy.Options{}).Test(ctx, policy.TestOptions{Coverage: to.coverage, Run: to.run}, overrides...)
	if err != nil {
		return err
	}
	results := rep.Results
	if len(results) == 0 && to.run != "" {
		return fmt.Errorf("no test matches --run %q", to.run)
	}
	ch := make(chan *tester.Result, len(results))
	ok := true
	for _, r := range results {
		ok = ok && r.Pass()
		if r.Pass() && !to.explain {
			r.Trace = nil
		} else {
			r.Trace = failingEvent(r.Trace)
		}
		ch <- r
	}
	close(ch)
	if err := reportTests(c, ch, o); err != nil {
		return err
	}
	if rep.Coverage != nil {
		printCoverage(c.Stdout, rep.Coverage)
	}
	if !ok {
		return cmdline.ExitCode(1)
	}
	return nil
}

// testOptions are policy test's flags.
type testOptions struct {
	coverage, explain bool
	// run is --run's regular expression ("" for every test).
	run string
}

// reportTests prints the results as 'opa test' does: its verbose text by
// default, its JSON report (--format=json) with -o json, yaml or jsonpath.
func reportTests(c *cmdline.CLI, ch chan *tester.Result, o output.Output) error {
	if o.Format == "" {
		return tester.PrettyReporter{Output: c.Stdout, Verbose: true, FailureLine: true}.Report(ch)
	}
	var buf bytes.Buffer
	if err := (tester.JSONReporter{Output: &buf}).Report(ch); err != nil {
		return err
	}
	return o.WriteData(c.Stdout, buf.Bytes())
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

// printCoverage prints the coverage of each policy file, its lines never
// evaluated as ranges, and the total.
func printCoverage(w io.Writer, r *cover.Report) {
	fmt.Fprintln(w, "\nCOVERAGE")
	for _, file := range slices.Sorted(maps.Keys(r.Files)) {
		f := r.Files[file]
		var missed []string
		for _, rng := range mergedRows(f.NotCovered) {
			if rng[0] == rng[1] {
				missed = append(missed, strconv.Itoa(rng[0]))
			} else {
				missed = append(missed, fmt.Sprintf("%d-%d", rng[0], rng[1]))
			}
		}
		line := fmt.Sprintf("%6.1f%%  %s (%d of %d lines)", f.Coverage, file, f.CoveredLines, f.CoveredLines+f.NotCoveredLines)
		if len(missed) > 0 {
			line += "; not reached: " + strings.Join(missed, ", ")
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "%6.1f%%  total (%d of %d lines)\n", r.Coverage, r.CoveredLines, r.CoveredLines+r.NotCoveredLines)
}

// mergedRows joins ranges of rows that touch: 5, 6 is 5-6.
func mergedRows(rs []cover.Range) [][2]int {
	var out [][2]int
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start.Row <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], r.End.Row)
			continue
		}
		out = append(out, [2]int{r.Start.Row, r.End.Row})
	}
	return out
}
