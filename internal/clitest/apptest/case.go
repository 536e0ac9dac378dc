package apptest

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

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// RunAs runs one command line as name, as the binary of a build with no
// -ldflags would, and returns its exit code.
func RunAs(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return app.Run(ctx, cmdline.Build{Version: "dev"}, name, args, genericiooptions.IOStreams{In: stdin, Out: stdout, ErrOut: stderr})
}

// Run runs one command line as gpuadmit.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return RunAs(context.Background(), "gpuadmit", args, stdin, stdout, stderr)
}

// Case is one command line and what it must produce.
type Case struct {
	Name string
	// as is the name the command runs as (default gpuadmit).
	As       string
	Args     []string
	Stdin    string
	WantCode int
	// wantOut is the expected stdout as JSON, compared structurally; when
	// empty, stdout must be empty unless the command succeeded.
	WantOut string
	// wantText is the expected stdout, exactly (wantOut is not read).
	WantText string
	// wantTextSub must each appear in stdout (wantOut is not read).
	WantTextSub []string
	// notInText must not appear in stdout.
	NotInText []string
	// wantObjects are the objects of a multi-object JSON, in order, as
	// objectsOf writes them (wantOut is not read).
	WantObjects []string
	// wantErrSub must appear in stderr; when empty, stderr must be empty.
	WantErrSub string
	// wantErr is the whole of stderr, when set (wantErrSub is not read).
	WantErr string
}

// Check runs the command line and compares exit code, stdout and stderr.
func (tt Case) Check(t *testing.T) {
	t.Helper()
	var out, errOut bytes.Buffer
	as := cmp.Or(tt.As, "gpuadmit")
	code := RunAs(t.Context(), as, tt.Args, strings.NewReader(tt.Stdin), &out, &errOut)
	if code != tt.WantCode {
		t.Fatalf("exit code %d, want %d; stderr: %s", code, tt.WantCode, errOut.String())
	}
	tt.checkStderr(t, errOut.String())
	if tt.checkText(t, out.Bytes()) {
		return
	}
	tt.checkJSON(t, out.Bytes())
}

// checkText compares stdout with NotInText, WantText, WantTextSub and
// WantObjects, and reports whether one of the last three was set (then
// WantOut is not read).
func (tt Case) checkText(t *testing.T, stdout []byte) bool {
	t.Helper()
	out := string(stdout)
	for _, sub := range tt.NotInText {
		if strings.Contains(out, sub) {
			t.Errorf("stdout contains %q:\n%s", sub, out)
		}
	}
	if tt.WantText != "" && out != tt.WantText {
		t.Errorf("stdout\n%s\nwant\n%s", out, tt.WantText)
	}
	for _, sub := range tt.WantTextSub {
		if !strings.Contains(out, sub) {
			t.Errorf("stdout does not contain %q:\n%s", sub, out)
		}
	}
	if tt.WantObjects != nil {
		if got := objectsOf(t, stdout); !slices.Equal(got, tt.WantObjects) {
			t.Errorf("objects %q, want %q", got, tt.WantObjects)
		}
	}
	return tt.WantText != "" || tt.WantTextSub != nil || tt.WantObjects != nil
}

// checkJSON compares stdout with WantOut, structurally; when WantOut is
// empty, stdout must be empty unless the command succeeded.
func (tt Case) checkJSON(t *testing.T, stdout []byte) {
	t.Helper()
	if tt.WantOut == "" {
		if tt.WantCode != 0 && len(stdout) != 0 {
			t.Errorf("stdout not empty on error: %s", stdout)
		}
		return
	}
	var got, want any
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if err := json.Unmarshal([]byte(tt.WantOut), &want); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("stdout\n%s\nwant\n%s", g, w)
	}
}

// checkStderr compares stderr with wantErr, or wantErrSub.
func (tt Case) checkStderr(t *testing.T, stderr string) {
	t.Helper()
	switch {
	case tt.WantErr != "":
		if stderr != tt.WantErr {
			t.Errorf("stderr %q, want %q", stderr, tt.WantErr)
		}
	case tt.WantErrSub != "" && !strings.Contains(stderr, tt.WantErrSub):
		t.Errorf("stderr %q does not contain %q", stderr, tt.WantErrSub)
	case tt.WantErrSub == "" && stderr != "":
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
