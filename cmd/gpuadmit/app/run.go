package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Run executes one command line as name ("gpuadmit" or "kubectl
// gpuadmit", see Invocation), built as build says, and returns the process
// exit code: 0 ok, 1 a pod denied or a policy test failed, 2 bad input or
// an error (printed on streams.ErrOut).
func Run(ctx context.Context, build Build, name string, args []string, streams genericiooptions.IOStreams) int {
	c := newCLI(streams.In, streams.Out, streams.ErrOut)
	c.build = build
	return c.execute(ctx, name, args)
}

// execute runs one command line on c's command tree.
func (c *cli) execute(ctx context.Context, name string, args []string) int {
	root := c.root(name)
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	root.SetArgs(goStyleFlags(root, args))
	cmd, err := root.ExecuteContextC(ctx)
	var code exitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintf(c.stderr, "%s: %v\n", cmd.CommandPath(), err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "See '%s --help' for usage.\n", cmd.CommandPath())
	}
	return 2
}

// exitCode ends a command with a code and no message (what it had to say
// is on stdout already).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

// usageError is a command line that does not say what to do: a flag or an
// argument that is unknown, missing or malformed.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
