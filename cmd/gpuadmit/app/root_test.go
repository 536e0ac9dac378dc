package app

import (
	"slices"
	"testing"
)

func TestCommandLine(t *testing.T) {
	seed := state + "seed-init-running.yaml"
	tests := []cliCase{
		{name: "--help exits 0", args: []string{"--help"},
			wantTextSub: []string{"Usage:\n  gpuadmit [flags]\n  gpuadmit [command]", "usage       Show GPU usage", "--kubeconfig string", "-n, --namespace string"}},
		{name: "a command's --help exits 0", args: []string{"usage", "--help"},
			wantTextSub: []string{"gpuadmit usage [--state STATE.yaml] [-n NAMESPACE | -A] [-o table|wide|json|yaml|jsonpath=TEMPLATE] [flags]",
				"-o, --output string", "-A, --all-namespaces", "Global Flags:", "--as string", "--kubeconfig string"}},
		{name: "Go-style -help", args: []string{"eval", "-help"}, wantTextSub: []string{"gpuadmit eval -f POD.yaml", "-f, --filename string"}},
		{name: "help COMMAND", args: []string{"help", "policy", "test"}, wantTextSub: []string{"gpuadmit policy test [DIR]"}},
		{name: "version", args: []string{"version"}, wantText: "gpuadmit version " + versionLine(Build{Version: "dev"}) + "\n"},
		{name: "--version", args: []string{"--version"}, wantText: "gpuadmit version " + versionLine(Build{Version: "dev"}) + "\n"},
		{name: "version as the kubectl plugin", as: "kubectl gpuadmit", args: []string{"version"}, wantText: "kubectl gpuadmit version " + versionLine(Build{Version: "dev"}) + "\n"},
		{name: "bash completion", args: []string{"completion", "bash"}, wantTextSub: []string{"# bash completion V2 for gpuadmit", "__start_gpuadmit"}},
		{name: "zsh completion", args: []string{"completion", "zsh"}, wantTextSub: []string{"#compdef gpuadmit"}},
		{name: "fish completion", args: []string{"completion", "fish"}, wantTextSub: []string{"complete -c gpuadmit"}},
		{name: "powershell completion", args: []string{"completion", "powershell"}, wantTextSub: []string{"Register-ArgumentCompleter"}},
		{name: "completion of -o values", args: []string{"__complete", "usage", "-o", ""}, wantTextSub: []string{"table\nwide\njson\nyaml\njsonpath=\n:4\n"},
			wantErrSub: "Completion ended with directive: ShellCompDirectiveNoFileComp"},
		{name: "completion of a shell that does not exist", args: []string{"completion", "tcsh"}, wantCode: 2,
			wantErrSub: `gpuadmit completion: unknown shell "tcsh": bash, zsh, fish or powershell`},
		{name: "completion without a shell", args: []string{"completion"}, wantCode: 2,
			wantErrSub: "gpuadmit completion: a shell is required; usage: gpuadmit completion bash|zsh|fish|powershell"},
		{name: "unknown flag: the command and a hint", args: []string{"usage", "--bogus"}, wantCode: 2,
			wantErrSub: "gpuadmit usage: unknown flag: --bogus\nSee 'gpuadmit usage --help' for usage.\n"},
		{name: "unknown command: a suggestion", args: []string{"usag"}, wantCode: 2,
			wantErrSub: "gpuadmit: unknown command \"usag\" for \"gpuadmit\"\n\nDid you mean this?\n\tusage\n\nSee 'gpuadmit --help' for usage.\n"},
		{name: "bad -o: the formats allowed", args: []string{"usage", "--state", seed, "-o", "xml"}, wantCode: 2,
			wantErrSub: `gpuadmit usage: --output "xml" is not a format this command prints: allowed formats are table, wide, json, yaml, jsonpath=TEMPLATE`},
		{name: "a flag value missing", args: []string{"eval", "-f"}, wantCode: 2, wantErrSub: "flag needs an argument: 'f' in -f"},
		{name: "Go-style -state and -f=", args: []string{"eval", "-f=" + pods + "scenario4-app12.yaml", "-state", seed, "-o=table"}, wantCode: 1,
			wantTextSub: []string{"Pod    team-a      small-job   false     0/1        1     12288         0"}},
		{name: "a command line written against the plugin names it", as: "kubectl gpuadmit", args: []string{"usage", "--bogus"}, wantCode: 2,
			wantErrSub: "kubectl gpuadmit usage: unknown flag: --bogus\nSee 'kubectl gpuadmit usage --help' for usage.\n"},
		{name: "help of the plugin says kubectl gpuadmit", as: "kubectl gpuadmit", args: []string{"usage", "--help"},
			wantTextSub: []string{"kubectl gpuadmit usage [--state STATE.yaml]", "  kubectl gpuadmit usage -A\n", "  kubectl gpuadmit usage --state state.yaml -n team-a"}},
		{name: "root help of the plugin", as: "kubectl gpuadmit", args: []string{"-h"},
			wantTextSub: []string{"Usage:\n  kubectl gpuadmit [flags]", `Use "kubectl gpuadmit [command] --help"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
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
			name, args := Invocation(tt.argv0, []string{"usage"})
			if name != tt.wantName || !slices.Equal(args, tt.wantArgs) {
				t.Errorf("Invocation(%q) = %q, %q; want %q, %q", tt.argv0, name, args, tt.wantName, tt.wantArgs)
			}
		})
	}
}
