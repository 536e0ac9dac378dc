package app

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// Run executes one command line as name ("gpuadmit" or "kubectl
// gpuadmit", see Invocation), built as build says, and returns the process
// exit code: 0 ok, 1 a pod denied or a policy test failed, 2 bad input or
// an error (printed on streams.ErrOut).
func Run(ctx context.Context, build cmdline.Build, name string, args []string, streams genericiooptions.IOStreams) int {
	c := cmdline.New(streams.In, streams.Out, streams.ErrOut)
	c.Build = build
	return Execute(ctx, c, name, args)
}

// Execute runs one command line on c's command tree and returns its exit
// code (see Run).
func Execute(ctx context.Context, c *cmdline.CLI, name string, args []string) int {
	root := newRoot(c, name)
	if args == nil {
		args = []string{} // cobra reads os.Args when given nil
	}
	args = goStyleFlags(root, args)
	root.SetArgs(args)
	cmd, err := root, cmdline.MistypedCommand(root, args)
	if err == nil {
		cmd, err = root.ExecuteContextC(ctx)
	} else if c, _, ferr := root.Find(args); ferr == nil {
		cmd = c
	}
	var code cmdline.ExitCode
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	}
	fmt.Fprintf(c.Stderr, "%s: %v\n", cmd.CommandPath(), err)
	var ue cmdline.UsageError
	if errors.As(err, &ue) {
		fmt.Fprintf(c.Stderr, "See '%s --help' for usage.\n", cmd.CommandPath())
	}
	return 2
}
