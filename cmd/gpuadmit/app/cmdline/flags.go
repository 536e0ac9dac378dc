package cmdline

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// NoArgs is the argument check of a command that takes none.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return UsageErrorf("unexpected argument %q; usage: %s", args[0], cmd.UseLine())
	}
	return nil
}

// FilenameFlag adds -f/--filename, which repeats as in kubectl, and
// -R/--recursive; --f (as the command line accepted it before it followed
// kubectl) names -f too. what says what the manifests hold.
func FilenameFlag(cmd *cobra.Command, m *ManifestFlags, what string) {
	cmd.Flags().SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if name == "f" {
			name = "filename"
		}
		return pflag.NormalizedName(name)
	})
	// Not kubectl's StringSlice: a comma is part of a file name (t.TempDir
	// makes such names), not a separator.
	cmd.Flags().StringArrayVarP(&m.Files, "filename", "f", nil,
		what+" (YAML or JSON): a file, a directory of .json, .yaml and .yml files, or - for standard input; repeat -f for more, read in order")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	cmd.Flags().BoolVarP(&m.recursive, "recursive", "R", false, "read the directories -f names and their subdirectories")
}

// ConfigFlag adds --config; dflt says what is used without it.
func ConfigFlag(cmd *cobra.Command, path *string, dflt string) {
	cmd.Flags().StringVar(path, "config", "", "configuration file, the webhook's (or a HAMi device config); default: "+dflt)
	_ = cmd.MarkFlagFilename("config", "yaml", "yml", "json")
}
