package policy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

// suiteHeader starts a suite whose one test loads mine.rego (a rule on
// input.pod.labels and input.userInfo.groups) against the seed's idle A10.
const suiteHeader = `apiVersion: gpuadmit.io/v1alpha1
kind: PolicySuite
tests:
- name: labels
  policies: [mine.rego]
  state: ` + "../../../../examples/state/idle-a10-quota24g.yaml" + `
  cases:
`

const suitePolicy = `package gpuadmit.admission

deny contains sprintf("pod %q: label team required", [input.pod.name]) if {
	not input.pod.labels.team
	not "admins" in input.userInfo.groups
}
`

const suitePod = `    pod:
      apiVersion: v1
      kind: Pod
      metadata: {name: p, namespace: team-a}
      spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: 1024}}}]}
`

func TestPolicyVerifyCommand(t *testing.T) {
	suite := func(t *testing.T, policy, body string) string {
		t.Helper()
		d := t.TempDir()
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		header := strings.ReplaceAll(suiteHeader, "../../../../examples", filepath.Join(wd, "../../../../examples"))
		for name, text := range map[string]string{"mine.rego": policy, "suite.yaml": header + body} {
			if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return filepath.Join(d, "suite.yaml")
	}
	tests := []struct {
		name     string
		policy   string
		body     string // cases
		suite    string // a path instead of policy and body
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{name: "the example library's suite", suite: "../../../../examples/policy/suite.yaml",
			wantOut: []string{"PASS  required-labels/denied without a cost-center label", "PASS  h200-whole-cards/a member of ml-leads may book a whole H200", "31 passed, 0 failed"}},
		{name: "expectations met", policy: suitePolicy,
			body: "  - name: no label\n" + suitePod + "    expect: {allowed: false, denials: [label team required]}\n" +
				"  - name: an admin\n    user: {username: root, groups: [admins]}\n" + suitePod + "    expect: {allowed: true}\n",
			wantOut: []string{"PASS  labels/no label\nPASS  labels/an admin\n2 passed, 0 failed"}},
		{name: "a wrong verdict fails the case and the run", policy: suitePolicy,
			body:     "  - name: no label\n" + suitePod + "    expect: {allowed: true}\n",
			wantCode: 1, wantOut: []string{`FAIL  labels/no label: want allowed, got denied: pod "p": label team required`, "0 passed, 1 failed"}},
		{name: "a missing message fails", policy: suitePolicy,
			body:     "  - name: no label\n" + suitePod + "    expect: {allowed: false, denials: [cost-center]}\n",
			wantCode: 1, wantOut: []string{`FAIL  labels/no label: no denial contains "cost-center"; got ["pod \"p\": label team required"]`}},
		{name: "denied when allowed was expected the other way round", policy: suitePolicy,
			body:     "  - name: admin\n    user: {username: root, groups: [admins]}\n" + suitePod + "    expect: {allowed: false}\n",
			wantCode: 1, wantOut: []string{"FAIL  labels/admin: want denied, got allowed"}},
		{name: "a policy with a misspelt field fails every case, naming the field", policy: strings.ReplaceAll(suitePolicy, "input.pod.labels", "input.pod.label"),
			body:     "  - name: no label\n" + suitePod + "    expect: {allowed: false}\n",
			wantCode: 1, wantOut: []string{"FAIL  labels/no label: the test's policies were not loaded", "mine.rego:4: rego_type_error: undefined ref: input.pod.label.team", `want (one of): ["annotations"`}},
		{name: "an unknown field in the suite", policy: suitePolicy,
			body:     "  - name: x\n" + suitePod + "    expect: {allowed: true, denied: [x]}\n",
			wantCode: 2, wantErr: `unknown field "denied"`},
		{name: "a case with neither pod nor file", policy: suitePolicy,
			body: "  - name: x\n    expect: {allowed: true}\n", wantCode: 2, wantErr: "tests[0] (labels).cases[0] (x): give exactly one of pod (inline) and file"},
		{name: "a case without an expectation", policy: suitePolicy,
			body: "  - name: x\n" + suitePod, wantCode: 2, wantErr: "expect.allowed: required"},
		{name: "missing suite", suite: "nope.yaml", wantCode: 2, wantErr: "nope.yaml: no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.suite
			if path == "" {
				path = suite(t, tt.policy, tt.body)
			}
			var out, errOut bytes.Buffer
			code := apptest.Run([]string{"policy", "verify", path}, strings.NewReader(""), &out, &errOut)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout: %s\nstderr: %s", code, tt.wantCode, out.String(), errOut.String())
			}
			for _, s := range tt.wantOut {
				if !strings.Contains(out.String(), s) {
					t.Errorf("stdout does not contain %q:\n%s", s, out.String())
				}
			}
			if !strings.Contains(errOut.String(), tt.wantErr) || tt.wantErr == "" && errOut.Len() != 0 {
				t.Errorf("stderr %q, want %q", errOut.String(), tt.wantErr)
			}
		})
	}
}
