package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// cliCase is one command line and what it must produce.
type cliCase struct {
	name     string
	args     []string
	stdin    string
	wantCode int
	// wantOut is the expected stdout as JSON, compared structurally; when
	// empty, stdout must be empty unless the command succeeded.
	wantOut string
	// wantErrSub must appear in stderr; when empty, stderr must be empty.
	wantErrSub string
}

// check runs the command line and compares exit code, stdout and stderr.
func (tt cliCase) check(t *testing.T) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(tt.args, strings.NewReader(tt.stdin), &out, &errOut)
	if code != tt.wantCode {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.wantCode, errOut.String())
	}
	if tt.wantErrSub != "" && !strings.Contains(errOut.String(), tt.wantErrSub) {
		t.Errorf("stderr %q does not contain %q", errOut.String(), tt.wantErrSub)
	}
	if tt.wantErrSub == "" && errOut.Len() != 0 {
		t.Errorf("unexpected stderr: %s", errOut.String())
	}
	if tt.wantOut == "" {
		if tt.wantCode != 0 && out.Len() != 0 {
			t.Errorf("stdout not empty on error: %s", out.String())
		}
		return
	}
	var got, want any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, out.String())
	}
	if err := json.Unmarshal([]byte(tt.wantOut), &want); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("stdout\n%s\nwant\n%s", g, w)
	}
}
