package cmdline

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestionDistance is the largest edit distance of a suggestion, as
// cobra's SuggestionsMinimumDistance (and kubectl's) default.
const suggestionDistance = 2

// UnknownCommand is the argument check of a command whose arguments are
// commands (the root, policy): an unknown one is a usage error that
// suggests the commands it resembles, as kubectl does.
func UnknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	cmd.SuggestionsMinimumDistance = suggestionDistance
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	return UsageError{fmt.Errorf("%s%s", msg, didYouMean(cmd.SuggestionsFor(args[0])))}
}

// didYouMean is kubectl's (cobra's) suggestion text, "" for none.
func didYouMean(suggestions []string) string {
	if len(suggestions) == 0 {
		return ""
	}
	return "\n\nDid you mean this?\n\t" + strings.Join(suggestions, "\n\t") + "\n"
}

// FlagError makes a flag error a usage error; an unknown long flag
// suggests the flags of the command it resembles (cobra suggests commands
// only).
func FlagError(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return UsageError{err}
	}
	name, _, _ = strings.Cut(name, "=")
	return UsageError{fmt.Errorf("%w%s", err, didYouMean(flagSuggestions(cmd, name)))}
}

// flagSuggestions are the flags of cmd (its own and those it inherits)
// within suggestionDistance of name, or that name begins, "--" included.
func flagSuggestions(cmd *cobra.Command, name string) []string {
	var out []string
	visit := func(f *pflag.Flag) {
		if f.Hidden || slices.Contains(out, "--"+f.Name) {
			return
		}
		if levenshtein(strings.ToLower(name), f.Name) <= suggestionDistance || len(name) > 2 && strings.HasPrefix(f.Name, name) {
			out = append(out, "--"+f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	slices.Sort(out)
	return out
}

// levenshtein is the edit distance of a and b (insertions, deletions and
// substitutions of bytes).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MistypedCommand is the error of a command line whose command is not
// one of root's (or of the command group it names, as policy), whatever
// flags come with it: cobra parses the flags of the group first, and a
// flag of the mistyped command would hide the name (`gpuadmit efective -f
// x` says "unknown shorthand flag" otherwise). nil when the command line
// names a command, or none.
func MistypedCommand(root *cobra.Command, args []string) error {
	cmd, rest, err := root.Find(args)
	if err != nil || !cmd.HasSubCommands() || cmd.Name() == "completion" {
		return nil
	}
	name := firstPositional(cmd, rest)
	if name == "" || name == "help" || strings.HasPrefix(name, cobra.ShellCompRequestCmd) {
		return nil
	}
	for _, sub := range cmd.Commands() {
		if sub.Name() == name || sub.HasAlias(name) {
			return nil
		}
	}
	return UnknownCommand(cmd, []string{name})
}

// firstPositional is the first argument of args that is neither a flag
// nor the value of one of cmd's flags ("" when none); an unknown flag is
// taken to have no value.
func firstPositional(cmd *cobra.Command, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return ""
		case !strings.HasPrefix(a, "-") || a == "-":
			return a
		case strings.Contains(a, "="):
			continue
		}
		var f *pflag.Flag
		if name, long := strings.CutPrefix(a, "--"); long {
			f = cmd.Flags().Lookup(name)
		} else if len(a) == 2 {
			f = cmd.Flags().ShorthandLookup(a[1:])
		}
		if f != nil && f.NoOptDefVal == "" {
			i++ // its value
		}
	}
	return ""
}

// DidYouMeanOf is the suggestion text for name among candidates (those
// within suggestionDistance), "" for none.
func DidYouMeanOf(name string, candidates []string) string {
	var near []string
	for _, c := range candidates {
		if c != name && levenshtein(strings.ToLower(name), strings.ToLower(c)) <= suggestionDistance {
			near = append(near, c)
		}
	}
	return didYouMean(near)
}
