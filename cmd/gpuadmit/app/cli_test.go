package app

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// runAs runs one command line as name, as the binary of a build with no
// -ldflags would, and returns its exit code.
func runAs(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Run(ctx, Build{Version: "dev"}, name, args, genericiooptions.IOStreams{In: stdin, Out: stdout, ErrOut: stderr})
}

// run runs one command line as gpuadmit.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAs(context.Background(), "gpuadmit", args, stdin, stdout, stderr)
}

// cliCase is one command line and what it must produce.
type cliCase struct {
	name string
	// as is the name the command runs as (default gpuadmit).
	as       string
	args     []string
	stdin    string
	wantCode int
	// wantOut is the expected stdout as JSON, compared structurally; when
	// empty, stdout must be empty unless the command succeeded.
	wantOut string
	// wantText is the expected stdout, exactly (wantOut is not read).
	wantText string
	// wantTextSub must each appear in stdout (wantOut is not read).
	wantTextSub []string
	// notInText must not appear in stdout.
	notInText []string
	// wantObjects are the objects of a multi-object JSON, in order, as
	// objectsOf writes them (wantOut is not read).
	wantObjects []string
	// wantErrSub must appear in stderr; when empty, stderr must be empty.
	wantErrSub string
	// wantErr is the whole of stderr, when set (wantErrSub is not read).
	wantErr string
}

// check runs the command line and compares exit code, stdout and stderr.
func (tt cliCase) check(t *testing.T) {
	t.Helper()
	var out, errOut bytes.Buffer
	as := cmp.Or(tt.as, "gpuadmit")
	code := runAs(t.Context(), as, tt.args, strings.NewReader(tt.stdin), &out, &errOut)
	if code != tt.wantCode {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.wantCode, errOut.String())
	}
	tt.checkStderr(t, errOut.String())
	for _, sub := range tt.notInText {
		if strings.Contains(out.String(), sub) {
			t.Errorf("stdout contains %q:\n%s", sub, out.String())
		}
	}
	if tt.wantText != "" && out.String() != tt.wantText {
		t.Errorf("stdout\n%s\nwant\n%s", out.String(), tt.wantText)
	}
	for _, sub := range tt.wantTextSub {
		if !strings.Contains(out.String(), sub) {
			t.Errorf("stdout does not contain %q:\n%s", sub, out.String())
		}
	}
	if tt.wantObjects != nil {
		if got := objectsOf(t, out.Bytes()); !slices.Equal(got, tt.wantObjects) {
			t.Errorf("objects %q, want %q", got, tt.wantObjects)
		}
	}
	if tt.wantText != "" || tt.wantTextSub != nil || tt.wantObjects != nil {
		return
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

// checkStderr compares stderr with wantErr, or wantErrSub.
func (tt cliCase) checkStderr(t *testing.T, stderr string) {
	t.Helper()
	switch {
	case tt.wantErr != "":
		if stderr != tt.wantErr {
			t.Errorf("stderr %q, want %q", stderr, tt.wantErr)
		}
	case tt.wantErrSub != "" && !strings.Contains(stderr, tt.wantErrSub):
		t.Errorf("stderr %q does not contain %q", stderr, tt.wantErrSub)
	case tt.wantErrSub == "" && stderr != "":
		t.Errorf("unexpected stderr: %s", stderr)
	}
}

// objectsOf names the objects of a multi-object JSON (eval's or
// effective's): "Pod team-a/p allowed" (eval), "Pod team-a/p" (effective).
func objectsOf(t *testing.T, stdout []byte) []string {
	t.Helper()
	var doc struct {
		Objects []struct {
			Kind, Namespace, Name string
			Allowed               *bool
		}
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	out := []string{}
	for _, o := range doc.Objects {
		s := fmt.Sprintf("%s %s/%s", o.Kind, o.Namespace, o.Name)
		switch {
		case o.Allowed == nil:
		case *o.Allowed:
			s += " allowed"
		default:
			s += " denied"
		}
		out = append(out, s)
	}
	return out
}
