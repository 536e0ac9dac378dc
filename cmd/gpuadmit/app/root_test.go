package app_test

import (
	"slices"
	"testing"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/version"
	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

func TestCommandLine(t *testing.T) {
	seed := state + "seed-init-running.yaml"
	tests := []apptest.Case{
		{Name: "--help exits 0", Args: []string{"--help"},
			WantTextSub: []string{"Usage:\n  gpuadmit [flags]\n  gpuadmit [command]", "usage       Show GPU usage", "--kubeconfig string", "-n, --namespace string"}},
		{Name: "a command's --help exits 0", Args: []string{"usage", "--help"},
			WantTextSub: []string{"gpuadmit usage [--state STATE.yaml] [-n NAMESPACE | -A] [-o table|wide|json|yaml|jsonpath=TEMPLATE] [flags]",
				"-o, --output string", "-A, --all-namespaces", "Global Flags:", "--as string", "--kubeconfig string"}},
		{Name: "Go-style -help", Args: []string{"eval", "-help"}, WantTextSub: []string{"gpuadmit eval -f POD.yaml", "-f, --filename string"}},
		{Name: "help COMMAND", Args: []string{"help", "policy", "test"}, WantTextSub: []string{"gpuadmit policy test [DIR]"}},
		{Name: "version", Args: []string{"version"}, WantText: "gpuadmit version " + version.Line(cmdline.Build{Version: "dev"}) + "\n"},
		{Name: "--version", Args: []string{"--version"}, WantText: "gpuadmit version " + version.Line(cmdline.Build{Version: "dev"}) + "\n"},
		{Name: "version as the kubectl plugin", As: "kubectl gpuadmit", Args: []string{"version"}, WantText: "kubectl gpuadmit version " + version.Line(cmdline.Build{Version: "dev"}) + "\n"},
		{Name: "bash completion", Args: []string{"completion", "bash"}, WantTextSub: []string{"# bash completion V2 for gpuadmit", "__start_gpuadmit"}},
		{Name: "zsh completion", Args: []string{"completion", "zsh"}, WantTextSub: []string{"#compdef gpuadmit"}},
		{Name: "fish completion", Args: []string{"completion", "fish"}, WantTextSub: []string{"complete -c gpuadmit"}},
		{Name: "powershell completion", Args: []string{"completion", "powershell"}, WantTextSub: []string{"Register-ArgumentCompleter"}},
		{Name: "completion of -o values", Args: []string{"__complete", "usage", "-o", ""}, WantTextSub: []string{"table\nwide\njson\nyaml\njsonpath=\nname\ncustom-columns=\n:4\n"},
			WantErrSub: "Completion ended with directive: ShellCompDirectiveNoFileComp"},
		{Name: "completion of a shell that does not exist", Args: []string{"completion", "tcsh"}, WantCode: 2,
			WantErrSub: `gpuadmit completion: unknown shell "tcsh": bash, zsh, fish or powershell`},
		{Name: "completion without a shell", Args: []string{"completion"}, WantCode: 2,
			WantErrSub: "gpuadmit completion: a shell is required; usage: gpuadmit completion bash|zsh|fish|powershell"},
		{Name: "unknown flag: the command and a hint", Args: []string{"usage", "--bogus"}, WantCode: 2,
			WantErrSub: "gpuadmit usage: unknown flag: --bogus\nSee 'gpuadmit usage --help' for usage.\n"},
		{Name: "unknown command: a suggestion", Args: []string{"usag"}, WantCode: 2,
			WantErrSub: "gpuadmit: unknown command \"usag\" for \"gpuadmit\"\n\nDid you mean this?\n\tusage\n\nSee 'gpuadmit --help' for usage.\n"},
		{Name: "bad -o: the formats allowed", Args: []string{"usage", "--state", seed, "-o", "xml"}, WantCode: 2,
			WantErrSub: `gpuadmit usage: --output "xml" is not a format this command prints: allowed formats are table, wide, json, yaml, jsonpath=TEMPLATE`},
		{Name: "a flag value missing", Args: []string{"eval", "-f"}, WantCode: 2, WantErrSub: "flag needs an argument: 'f' in -f"},
		{Name: "Go-style -state and -f=", Args: []string{"eval", "-f=" + pods + "scenario4-app12.yaml", "-state", seed, "-o=table"}, WantCode: 1,
			WantTextSub: []string{"Pod    team-a      small-job   false     0/1        1     12288         0"}},
		{Name: "a command line written against the plugin names it", As: "kubectl gpuadmit", Args: []string{"usage", "--bogus"}, WantCode: 2,
			WantErrSub: "kubectl gpuadmit usage: unknown flag: --bogus\nSee 'kubectl gpuadmit usage --help' for usage.\n"},
		{Name: "help of the plugin says kubectl gpuadmit", As: "kubectl gpuadmit", Args: []string{"usage", "--help"},
			WantTextSub: []string{"kubectl gpuadmit usage [--state STATE.yaml]", "  kubectl gpuadmit usage -A\n", "  kubectl gpuadmit usage --state state.yaml -n team-a"}},
		{Name: "root help of the plugin", As: "kubectl gpuadmit", Args: []string{"-h"},
			WantTextSub: []string{"Usage:\n  kubectl gpuadmit [flags]", `Use "kubectl gpuadmit [command] --help"`}},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}

func TestInvocation(t *testing.T) {
	tests := []struct {
		argv0    string
		wantName string
		wantArgs []string
	}{
		{argv0: "gpuadmit", wantName: "gpuadmit", wantArgs: []string{"usage"}},
		{argv0: "/home/me/bin/gpuadmit", wantName: "gpuadmit", wantArgs: []string{"usage"}},
		{argv0: "/usr/local/bin/kubectl-gpuadmit", wantName: "kubectl gpuadmit", wantArgs: []string{"usage"}},
		{argv0: "kubectl-gpuadmit.exe", wantName: "kubectl gpuadmit", wantArgs: []string{"usage"}},
		{argv0: "kubectl-gpu_admit", wantName: "kubectl gpu-admit", wantArgs: []string{"usage"}},
		{argv0: "/usr/local/bin/kubectl_complete-gpuadmit", wantName: "kubectl gpuadmit", wantArgs: []string{"__complete", "usage"}},
	}
	for _, tt := range tests {
		t.Run(tt.argv0, func(t *testing.T) {
			name, args := app.Invocation(tt.argv0, []string{"usage"})
			if name != tt.wantName || !slices.Equal(args, tt.wantArgs) {
				t.Errorf("Invocation(%q) = %q, %q; want %q, %q", tt.argv0, name, args, tt.wantName, tt.wantArgs)
			}
		})
	}
}
