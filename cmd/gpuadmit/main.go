package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	name, args := invocation(os.Args[0], os.Args[1:])
	code := runAs(ctx, name, args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// invocation returns the name the command answers to and its arguments:
// kubectl runs a plugin with the plugin's path as argv[0], so the binary
// installed as kubectl-gpuadmit is `kubectl gpuadmit`; kubectl asks the
// executable kubectl_complete-gpuadmit for the plugin's shell completions.
func invocation(argv0 string, args []string) (string, []string) {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if plugin, ok := strings.CutPrefix(base, "kubectl_complete-"); ok {
		return "kubectl " + plugin, append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok {
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-"), args
	}
	return "gpuadmit", args
}

// run executes one command line as gpuadmit and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runAs(context.Background(), "gpuadmit", args, stdin, stdout, stderr)
}

// runAs executes one command line as name ("gpuadmit" or "kubectl
// gpuadmit") and returns the process exit code: 0 ok, 1 a pod denied or a
// policy test failed, 2 bad input or an error (printed on stderr).
func runAs(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := newCLI(stdin, stdout, stderr)
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
	fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	var ue usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "See '%s --help' for usage.\n", cmd.CommandPath())
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
