package app

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/audit"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	effectivecmd "github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/effective"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/eval"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/policy"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/top"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/usage"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/version"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/why"
)

// newRoot builds the command tree; name is what the user typed to run it.
func newRoot(c *cmdline.CLI, name string) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpuadmit",
		Short: "GPU admission policy tool",
		Long: `gpuadmit computes what the gpuadmit admission webhook computes: a pod's
effective GPU demand, each namespace's GPU usage against its quotas, what
each pod and claim is charged, which namespaces are over a limit, and the
webhook's decision for a new pod, from manifests and a 'kubectl get -o yaml'
dump (--state) or from the cluster of the current kubeconfig context.

Manifests may be YAML or JSON, a single object, a List or a multi-document
stream ("-" reads standard input), in files or directories. usage, top,
audit, eval and effective print a table unless -o json, yaml, wide,
jsonpath=TEMPLATE, name or custom-columns=HEADER:PATH,... (--no-headers
leaves the header out). Exit codes: 0 ok, 1 a pod denied, a policy test
failed or a namespace over a limit (audit, top --fail-over), 2 bad input
or error (a file or object that failed, after the others are printed).`,
		Version:       version.Line(c.Build),
		Args:          cmdline.UnknownCommand,
		SilenceErrors: true,
		SilenceUsage:  true,
		// With no command: the help on stdout, exit 0, as kubectl.
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetIn(c.Stdin)
	root.SetOut(c.Stdout)
	root.SetErr(c.Stderr)
	root.SetFlagErrorFunc(cmdline.FlagError)
	source.ConnectionFlags(c, root)
	// --version without cobra's -v shorthand, which kubectl users know as
	// the log level.
	root.Flags().Bool("version", false, "print the version")
	root.AddCommand(effectivecmd.NewCmd(c), usage.NewCmd(c), top.NewCmd(c), audit.NewCmd(c), eval.NewCmd(c), why.NewCmd(c), policy.NewCmd(c), version.NewCmd(c))
	root.InitDefaultCompletionCmd()
	for _, sub := range root.Commands() {
		if sub.Name() == "completion" {
			sub.Args, sub.RunE = cobra.ArbitraryArgs, noShell
		}
	}
	if name != root.Name() {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: name}
		renameExamples(root, name)
	}
	return root
}

// renameExamples makes the examples of cmd and its subcommands run the
// command as name (kubectl gpuadmit).
func renameExamples(cmd *cobra.Command, name string) {
	cmd.Example = strings.ReplaceAll(cmd.Example, "gpuadmit ", name+" ")
	for _, sub := range cmd.Commands() {
		renameExamples(sub, name)
	}
}

// noShell answers `completion` without a shell it knows (cobra prints
// the help and exits 0).
func noShell(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmdline.UsageErrorf("a shell is required; usage: %s bash|zsh|fish|powershell", cmd.CommandPath())
	}
	return cmdline.UsageErrorf("unknown shell %q: bash, zsh, fish or powershell", args[0])
}

// goStyleFlags rewrites the single-dash long flags Go's flag package
// accepted (-state x, -config=y) to the double-dash form, for the
// command's own flags, so that command lines written before gpuadmit
// followed kubectl keep working (-state would read as -s tate otherwise).
func goStyleFlags(root *cobra.Command, args []string) []string {
	cmd, _, err := root.Find(args)
	if err != nil {
		return args
	}
	known := func(name string) bool {
		return name == "help" || name == "version" && cmd == root ||
			cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil
	}
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && len(name) > 1 && known(name) {
			a = "-" + a
		}
		out = append(out, a)
	}
	return out
}
