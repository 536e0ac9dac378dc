// Command gpuadmit is the command-line tool for policy authors and operators:
// it computes the numbers the admission webhook computes online, offline from
// manifests and a 'kubectl get -o yaml' dump, or from the cluster of the
// current kubeconfig context.
//
//	gpuadmit effective -f POD.yaml [-f ...] [-R] [--config CFG] [--device-memory MiB] [-o FORMAT]
//	gpuadmit usage [--state STATE.yaml] [-n NAMESPACE | -A] [-o FORMAT]
//	gpuadmit top [--state STATE.yaml] [-n NAMESPACE | -A] [--sort-by ORDER] [--what-if NS=RESOURCE=LIMIT ...] [--fail-over] [-o FORMAT]
//	gpuadmit audit [--state STATE.yaml] [-n NAMESPACE | -A] [-o FORMAT]
//	gpuadmit eval -f POD.yaml [-f ...] [-R] [--state STATE.yaml] [-n NAMESPACE] [-o FORMAT]
//	gpuadmit policy test [DIR] | verify SUITE.yaml | schema
//	gpuadmit version [-o json|yaml] | completion bash|zsh|fish|powershell
//
// Installed on the PATH as kubectl-gpuadmit, it is the kubectl plugin
// `kubectl gpuadmit`. Without --state, usage, top, audit and eval read the
// cluster with kubectl's connection flags (--kubeconfig, --context, -n,
// --as, ...), and decide with the webhook's configuration and policy
// ConfigMaps there unless --config and --policy are given; a line on
// stderr says which.
//
// effective, usage, top, audit and eval print a table on stdout, as
// kubectl does; -o json prints the command-line contract's JSON
// (docs/design.md), -o yaml that JSON as YAML, -o wide more columns, -o
// jsonpath=TEMPLATE a part of the JSON. Errors go to stderr with exit code 2; eval exits 1 when a pod
// is denied, policy test when a test fails, audit (and top --fail-over)
// when a namespace is over a limit. See docs/cli.md.
package main
