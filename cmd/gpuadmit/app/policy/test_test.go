package policy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

const policyUsage = "usage: gpuadmit policy test [DIR]"

// embeddedTests is the number of tests of the embedded policies, read from
// what `gpuadmit policy test` prints of them (all must pass), so that the
// cases below do not repeat a count the rego/ tests change.
func embeddedTests(t *testing.T) int {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := apptest.Run([]string{"policy", "test"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("policy test: exit code %d\n%s%s", code, out.String(), errOut.String())
	}
	m := regexp.MustCompile(`(?m)^PASS: (\d+)/(\d+)$`).FindStringSubmatch(out.String())
	if m == nil || m[1] != m[2] {
		t.Fatalf("policy test: no \"PASS: N/N\" line:\n%s", out.String())
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n == 0 {
		t.Fatalf("policy test: %q tests", m[1])
	}
	return n
}

// exampleTests is the number of tests of examples/policy.
const exampleTests = 40

func TestPolicyTestCommand(t *testing.T) {
	n := embeddedTests(t)
	passed := func(pass, of int) string { return fmt.Sprintf("PASS: %d/%d", pass, of) }
	dir := func(files map[string]string) string {
		d := t.TempDir()
		for name, text := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	failing := dir(map[string]string{"mine_test.rego": "package gpuadmit.admission_test\n\ntest_wrong if {\n\t1 == 2\n}\n"})
	broken := dir(map[string]string{"mine.rego": "package gpuadmit.admission\n\ndeny contains x if http.send({})\n"})
	// half covers one of its two rules.
	half := dir(map[string]string{
		"half.rego":      "package gpuadmit.admission\n\ndeny contains \"a\" if input.pod.name == \"a\"\n\ndeny contains \"b\" if {\n\tinput.pod.name == \"b\"\n}\n",
		"half_test.rego": "package half_test\n\nimport data.gpuadmit.admission\n\ntest_a if \"a\" in admission.deny with input as {\"pod\": {\"name\": \"a\"}}\n",
	})
	typo := dir(map[string]string{"typo.rego": "package gpuadmit.admission\n\ndeny contains \"x\" if input.demand.effectiv.gpu > 1\n"})
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string // substrings of stdout
		wantErr  string   // substring of stderr
	}{
		{name: "embedded policies", args: []string{"policy", "test"},
			wantOut: []string{"data.gpuadmit.builtin_test.test_init_peak_over_memory_limit_denied: PASS", passed(n, n)}},
		{name: "embedded plus an operator directory", args: []string{"policy", "test", "../../../../examples/policy"},
			wantOut: []string{"examples/policy/max-gpus-per-pod_test.rego", "test_five_gpus_denied: PASS", passed(n+exampleTests, n+exampleTests)}},
		{name: "a failing test", args: []string{"policy", "test", failing}, wantCode: 1,
			wantOut: []string{"test_wrong: FAIL", "mine_test.rego:4:\n    \t1 == 2", passed(n, n+1), fmt.Sprintf("FAIL: 1/%d", n+1)}},
		{name: "a policy calling http.send does not compile", args: []string{"policy", "test", broken}, wantCode: 2,
			wantErr: "undefined function http.send"},
		{name: "--coverage names the lines no test reached", args: []string{"policy", "test", half, "--coverage"},
			wantOut: []string{passed(n+1, n+1), "COVERAGE\n", "100.0%  embedded/limits.rego (", "half.rego (1 of 3 lines); not reached: 5-6\n", "total ("}},
		{name: "a misspelt input field does not compile", args: []string{"policy", "test", typo}, wantCode: 2,
			wantErr: "typo.rego:3: rego_type_error: undefined ref: input.demand.effectiv.gpu"},
		{name: "schema", args: []string{"policy", "schema"}, wantOut: []string{`"title": "gpuadmit PolicyInput gpuadmit.io/v1alpha1"`, `"namespaceLabels": {`}},
		{name: "missing directory", args: []string{"policy", "test", "nope"}, wantCode: 2, wantErr: "no such file"},
		{name: "no subcommand", args: []string{"policy"}, wantCode: 2, wantErr: policyUsage},
		{name: "--run: the matching tests alone, as opa test --run", args: []string{"policy", "test", "../../../../examples/policy", "--run", "gpu_tier_cap_test"},
			wantOut: []string{"data.gpuadmit.examples.gpu_tier_cap_test.test_update_not_checked: PASS", "PASS: 7/7"}},
		{name: "--run matching no test", args: []string{"policy", "test", "--run", "^nothing$"}, wantCode: 2, wantErr: `no test matches --run "^nothing$"`},
		{name: "--run not a regular expression", args: []string{"policy", "test", "--run", "("}, wantCode: 2, wantErr: `--run "(": error parsing regexp`},
		{name: "two directories", args: []string{"policy", "test", "a", "b"}, wantCode: 2, wantErr: policyUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := apptest.Run(tt.args, strings.NewReader(""), &out, &errOut)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout: %s\nstderr: %s", code, tt.wantCode, out.String(), errOut.String())
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout does not contain %q:\n%s", s, out.String())
				}
			}
			if tt.wantErr != "" && !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr %q does not contain %q", errOut.String(), tt.wantErr)
			}
			if tt.wantErr == "" && errOut.Len() != 0 {
				t.Errorf("unexpected stderr: %s", errOut.String())
			}
		})
	}
}

// TestPolicyTestJSON: -o json gives a failing test the expression that
// failed and a passing one no trace (--explain: every test its own).
func TestPolicyTestJSON(t *testing.T) {
	d := t.TempDir()
	if err := os.WriteFile(filepath.Join(d, "mine_test.rego"), []byte("package gpuadmit.admission_test\n\ntest_wrong if {\n\t1 == 2\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args         []string
		passingTrace bool
	}{
		{args: []string{"policy", "test", d, "-o", "json"}},
		{args: []string{"policy", "test", d, "-o", "json", "--explain"}, passingTrace: true},
	} {
		var out, errOut bytes.Buffer
		if code := apptest.Run(tt.args, strings.NewReader(""), &out, &errOut); code != 1 {
			t.Fatalf("%q: exit code %d, want 1; stderr: %s", tt.args, code, errOut.String())
		}
		var results []struct {
			Name  string            `json:"name"`
			Fail  bool              `json:"fail"`
			Trace []json.RawMessage `json:"trace"`
		}
		if err := json.Unmarshal(out.Bytes(), &results); err != nil {
			t.Fatalf("%q: not JSON: %v", tt.args, err)
		}
		traced := 0
		for _, r := range results {
			switch {
			case r.Fail && len(r.Trace) != 1:
				t.Errorf("%q: failing %s has %d trace events, want the one that failed", tt.args, r.Name, len(r.Trace))
			case !r.Fail && len(r.Trace) > 0:
				traced++
			}
		}
		if tt.passingTrace != (traced > 0) {
			t.Errorf("%q: %d passing tests with a trace of %d (%d bytes)", tt.args, traced, len(results), out.Len())
		}
		if !tt.passingTrace && out.Len() > 64<<10 {
			t.Errorf("%q: %d bytes, want a lean report", tt.args, out.Len())
		}
	}
}
