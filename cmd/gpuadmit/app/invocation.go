package app

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// Invocation returns the name the command answers to and its arguments,
// from the process's argv[0] and arguments: kubectl runs a plugin with the
// plugin's path as argv[0], so the binary installed as kubectl-gpuadmit is
// `kubectl gpuadmit`; kubectl asks the executable kubectl_complete-gpuadmit
// for the plugin's shell completions.
func Invocation(argv0 string, args []string) (string, []string) {
	base := strings.TrimSuffix(filepath.Base(argv0), ".exe")
	if plugin, ok := strings.CutPrefix(base, "kubectl_complete-"); ok {
		return "kubectl " + plugin, append([]string{cobra.ShellCompRequestCmd}, args...)
	}
	if plugin, ok := strings.CutPrefix(base, "kubectl-"); ok {
		return "kubectl " + strings.ReplaceAll(plugin, "_", "-"), args
	}
	return "gpuadmit", args
}
