package policy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/eval"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/policy"
)

func verifyCmd(c *cmdline.CLI) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "verify SUITE.yaml|DIR",
		Short: "Decide the cases of a policy suite and compare with what they expect",
		Long: `Load each test's policies on top of the built-in ones (their Rego tests
run first, as the webhook runs them), decide each case's pod against the
case's cluster state as 'gpuadmit eval' does, and compare with the case's
expectation: allowed or denied, and substrings of the denials and warnings.
A directory runs each of its files of kind PolicySuite (.yaml, .yml,
.json), each case named after its file. Prints a line per case and 'N
passed, N failed'; exits 1 when a case fails, 2 when a suite cannot be
read (docs/policy-verify.md).`,
		Example: `  gpuadmit policy verify examples/policy/suite.yaml
  gpuadmit policy verify examples/policy/`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return cmdline.UsageErrorf("usage: %s", cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := output.TextOr(format, output.DataFormats)
			if err != nil {
				return err
			}
			return policyVerify(cmd.Context(), c, args[0], o)
		},
	}
	output.Flag(cmd, &format, "", output.DataFormats)
	return cmd
}

// verifyResult is one case's result in policy verify -o json.
type verifyResult struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Reason string `json:"reason,omitempty"`
}

// verifyReport is policy verify -o json.
type verifyReport struct {
	Cases  []verifyResult `json:"cases"`
	Passed int            `json:"passed"`
	Failed int            `json:"failed"`
}

// policyVerify runs `gpuadmit policy verify SUITE|DIR`: a directory's
// suites are its .yaml, .yml and .json files of kind PolicySuite, each
// case named after its file then; one that cannot be read is a failed
// row, the others run (exit code 2 at the end).
func policyVerify(ctx context.Context, c *cmdline.CLI, path string, o output.Output) error {
	files, dir, err := suiteFiles(path)
	if err != nil {
		return err
	}
	rep := verifyReport{Cases: []verifyResult{}}
	report := func(ok bool, name, why string) {
		rep.Cases = append(rep.Cases, verifyResult{Name: name, Passed: ok, Reason: why})
		switch {
		case ok:
			rep.Passed++
		default:
			rep.Failed++
		}
		if o.Format != "" {
			return
		}
		if ok {
			fmt.Fprintf(c.Stdout, "PASS  %s\n", name)
			return
		}
		fmt.Fprintf(c.Stdout, "FAIL  %s: %s\n", name, why)
	}
	var unread []error
	for _, f := range files {
		suite, err := readSuite(f)
		if err != nil && !dir {
			return err
		}
		if err != nil {
			unread = append(unread, err)
			report(false, f, err.Error())
			continue
		}
		prefix := ""
		if dir {
			prefix = f + ": "
		}
		verifySuite(ctx, c, suite, func(ok bool, name, why string) { report(ok, prefix+name, why) })
	}
	if err := verifySummary(c, rep, o); err != nil {
		return err
	}
	switch {
	case len(unread) > 0:
		return cmdline.ExitCode(2)
	case rep.Failed > 0:
		return cmdline.ExitCode(1)
	}
	return nil
}

// suiteFiles are the suites path names: itself, or a directory's files of
// kind PolicySuite (dir set); a directory without any is an error.
func suiteFiles(path string) (files []string, dir bool, err error) {
	if st, err := os.Stat(path); err != nil || !st.IsDir() {
		return []string{path}, false, nil // reading it says what is wrong
	}
	all, err := manifest.Files([]string{path}, false)
	if err != nil {
		return nil, true, err
	}
	for _, f := range all {
		if data, err := os.ReadFile(f); err != nil || cmdline.IsSuite(data) {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, true, fmt.Errorf("%s: no policy suite (kind %s) in the directory", path, cmdline.SuiteKind)
	}
	return files, true, nil
}

// verifySuite decides every case of suite and reports each.
func verifySuite(ctx context.Context, c *cmdline.CLI, suite *policySuite, report func(ok bool, name, why string)) {
	for _, t := range suite.Tests {
		engine, err := suiteEngine(ctx, c, suite, t)
		if err != nil {
			for _, cs := range t.Cases {
				report(false, t.Name+"/"+cs.Name, fmt.Sprintf("the test's policies were not loaded: %v", err))
			}
			continue
		}
		for _, cs := range t.Cases {
			why := verifyCase(ctx, c, suite, t, cs, engine)
			report(why == "", t.Name+"/"+cs.Name, why)
		}
	}
}

// verifySummary prints the totals (text), or the whole report (-o).
func verifySummary(c *cmdline.CLI, rep verifyReport, o output.Output) error {
	if o.Format == "" {
		_, err := fmt.Fprintf(c.Stdout, "%d passed, %d failed\n", rep.Passed, rep.Failed)
		return err
	}
	data, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	return o.WriteData(c.Stdout, data)
}

// suiteEngine loads a test's policies: each entry a Rego file or a
// directory.
func suiteEngine(ctx context.Context, c *cmdline.CLI, suite *policySuite, t suiteTest) (*policy.Engine, error) {
	cfg, err := setup.LoadConfig(suite.path(t.Config), c.Stderr)
	if err != nil {
		return nil, err
	}
	var sources []policy.Source
	for _, p := range t.Policies {
		p = suite.path(p)
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if st.IsDir() {
			sources = append(sources, policy.Dir(p))
			continue
		}
		text, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		sources = append(sources, policy.Map(filepath.Dir(p), map[string]string{filepath.Base(p): string(text)}))
	}
	ctx, cancel := context.WithTimeout(ctx, eval.Timeout)
	defer cancel()
	return setup.LoadEngine(ctx, cfg, sources)
}

// verifyCase decides one case and says how it differs from what it
// expects ("" when it does not).
func verifyCase(ctx context.Context, c *cmdline.CLI, suite *policySuite, t suiteTest, cs suiteCase, engine *policy.Engine) string {
	ctx, cancel := context.WithTimeout(ctx, eval.Timeout)
	defer cancel()
	cfg, err := setup.LoadConfig(suite.path(t.Config), c.Stderr)
	if err != nil {
		return err.Error()
	}
	file, stdin := suite.path(cs.File), bytes.NewReader(nil)
	if cs.Pod != nil {
		data, err := json.Marshal(cs.Pod)
		if err != nil {
			return err.Error()
		}
		file, stdin = "-", bytes.NewReader(data)
	}
	state := cmp.Or(cs.State, t.State)
	e := eval.Evaluation{
		Namespace: cs.Namespace,
		Source:    source.NewDump(suite.path(state)),
		Warn: func(w string) {
			fmt.Fprintf(c.Stderr, "gpuadmit policy verify: warning: %s/%s: %s\n", t.Name, cs.Name, w)
		},
		User:   cs.User.info(),
		Setup:  setup.Setup{Cfg: cfg},
		Engine: engine,
		// A case's user decides its pods, a workload's included.
		PodsAsRequester: true,
	}
	out, _, err := e.Run(ctx, cmdline.ManifestFlags{Files: []string{file}}, stdin)
	if err == nil && len(out.Failed) > 0 {
		err = errors.Join(out.Failed...)
	}
	if err != nil {
		return err.Error()
	}
	var denials, warnings []string
	for _, o := range out.Objects {
		denials = append(denials, o.Denials...)
		warnings = append(warnings, o.Warnings...)
	}
	switch {
	case *cs.Expect.Allowed && !out.Allowed:
		return fmt.Sprintf("want allowed, got denied: %s", strings.Join(denials, "; "))
	case !*cs.Expect.Allowed && out.Allowed:
		return "want denied, got allowed"
	}
	for _, m := range []struct {
		what       string
		want, have []string
	}{{"denial", cs.Expect.Denials, denials}, {"warning", cs.Expect.Warnings, warnings}} {
		for _, sub := range m.want {
			if !slices.ContainsFunc(m.have, func(s string) bool { return strings.Contains(s, sub) }) {
				return fmt.Sprintf("no %s contains %q; got %q", m.what, sub, m.have)
			}
		}
	}
	return ""
}
