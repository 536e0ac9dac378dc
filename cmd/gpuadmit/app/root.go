package app

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"
)

// cli is one run of the command line: its streams, and kubectl's
// connection flags, which usage and eval use without --state.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	kube           *genericclioptions.ConfigFlags
	// tty reports whether a stream is a terminal: a slow live read tells
	// its progress on stderr then (after progressAfter, then every
	// progressEvery).
	tty                          func(io.Writer) bool
	progressAfter, progressEvery time.Duration
	// clock times the progress lines.
	clock clock.Clock
	// build is what `gpuadmit version` prints.
	build Build
}

func newCLI(stdin io.Reader, stdout, stderr io.Writer) *cli {
	return &cli{stdin: stdin, stdout: stdout, stderr: stderr, kube: genericclioptions.NewConfigFlags(true),
		tty: isTerminal, progressAfter: progressAfter, progressEvery: progressEvery, clock: clock.RealClock{}, build: Build{Version: "dev"}}
}

// root builds the command tree; name is what the user typed to run it.
func (c *cli) root(name string) *cobra.Command {
	root := &cobra.Command{
		Use:   "gpuadmit",
		Short: "GPU admission policy tool",
		Long: `gpuadmit computes what the gpuadmit admission webhook computes: a pod's
effective GPU demand, each namespace's GPU usage against its quotas, what
each pod and claim is charged, which namespaces are over a limit, and the
webhook's decision for a new pod, from manifests and a 'kubectl get -o yaml'
dump (--state) or from the cluster of the current kubeconfig context.

Manifests may be YAML or JSON, a single object, a List or a multi-document
stream ("-" reads standard input). usage, top, audit, eval and effective
print a table unless -o json, yaml, wide or jsonpath=TEMPLATE. Exit codes:
0 ok, 1 a pod denied, a policy test failed or a namespace over a limit
(audit, top --fail-over), 2 bad input or error.`,
		Version:       versionLine(c.build),
		Args:          unknownCommand,
		SilenceErrors: true,
		SilenceUsage:  true,
		// With no command: the usage on stderr, exit 2.
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprint(c.stderr, cmd.UsageString())
			return exitCode(2)
		},
	}
	root.SetIn(c.stdin)
	root.SetOut(c.stdout)
	root.SetErr(c.stderr)
	root.SetFlagErrorFunc(flagError)
	c.connectionFlags(root)
	// --version without cobra's -v shorthand, which kubectl users know as
	// the log level.
	root.Flags().Bool("version", false, "print the version")
	root.AddCommand(c.effectiveCmd(), c.usageCmd(), c.topCmd(), c.auditCmd(), c.evalCmd(), c.policyCmd(), c.versionCmd())
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
		return usageErrorf("a shell is required; usage: %s bash|zsh|fish|powershell", cmd.CommandPath())
	}
	return usageErrorf("unknown shell %q: bash, zsh, fish or powershell", args[0])
}

// noArgs is the argument check of a command that takes none.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q; usage: %s", args[0], cmd.UseLine())
	}
	return nil
}

// filenameFlag adds -f/--filename, which repeats as in kubectl, and
// -R/--recursive; --f (as the command line accepted it before it followed
// kubectl) names -f too. what says what the manifests hold.
func filenameFlag(cmd *cobra.Command, m *manifestFlags, what string) {
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "f" {
			name = "filename"
		}
		return pflag.NormalizedName(name)
	})
	// Not kubectl's StringSlice: a comma is part of a file name (t.TempDir
	// makes such names), not a separator.
	cmd.Flags().StringArrayVarP(&m.files, "filename", "f", nil,
		what+" (YAML or JSON): a file, a directory of .json, .yaml and .yml files, or - for standard input; repeat -f for more, read in order")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.Flags().BoolVarP(&m.recursive, "recursive", "R", false, "read the directories -f names and their subdirectories")
}

// configFlag adds --config; dflt says what is used without it.
func configFlag(cmd *cobra.Command, path *string, dflt string) {
	cmd.Flags().StringVar(path, "config", "", "configuration file, the webhook's (or a HAMi device config); default: "+dflt)
	_ = cmd.MarkFlagFilename("config", "yaml", "yml", "json")
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
