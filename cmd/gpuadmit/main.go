package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

const usage = `gpuadmit: GPU admission policy tool

Usage:
  gpuadmit effective -f POD.yaml [--config CFG] [--device-memory MiB]
      Print the pod's effective GPU demand (max of steady state and init peak).
  gpuadmit usage --state STATE.yaml [--config CFG]
      Print GPU usage per namespace (with quota limits) and per device, from
      the Pods, Nodes and ResourceQuotas of a 'kubectl get -o yaml' dump.
  gpuadmit eval -f POD.yaml --state STATE.yaml [--config CFG] [--policy DIR] [--namespace NS]
      Make the webhook's decision for a CREATE of POD in a cluster holding
      STATE: allowed, effective demand, denials, warnings. Exit 1 when denied.
  gpuadmit policy test [DIR]
      Run the Rego unit tests of the embedded policies (plus DIR's modules,
      loaded as the webhook loads them). Exit 1 when a test fails.

Manifests may be YAML or JSON, a single object, a List or a multi-document
stream ("-" reads standard input). Exit codes: 0 ok, 2 bad input or error.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "effective":
		return runEffective(args[1:], stdin, stdout, stderr)
	case "usage":
		return runUsage(args[1:], stdin, stdout, stderr)
	case "eval":
		return runEval(args[1:], stdin, stdout, stderr)
	case "policy":
		return runPolicy(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "gpuadmit: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

// fail prints err to stderr and returns exit code 2.
func fail(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "gpuadmit %s: %v\n", cmd, err)
	return 2
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
