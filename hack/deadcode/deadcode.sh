#!/usr/bin/env bash
# Dead code: the functions of the shipped packages (pkg/, cmd/, policy/) that
# no production main (./cmd/...) reaches, less the ones hack/deadcode/allow.txt
# keeps on purpose. internal/ (test support) is not checked: what it holds
# exists for the tests. Usage: deadcode.sh PATH-TO-DEADCODE-BINARY
set -euo pipefail
deadcode=${1:?usage: $0 path/to/deadcode}
cd "$(dirname "$0")/../.."
module=$(go list -m)
allow=hack/deadcode/allow.txt
# One line per unreachable function: "pkg/x.Func<TAB>file:line".
found=$("$deadcode" -filter "^${module//./\\.}/(pkg|cmd|policy)(/|\$)" \
	-f '{{range .Funcs}}{{$.Path}}.{{.Name}}	{{.Position.File}}:{{.Position.Line}}{{"\n"}}{{end}}' ./cmd/... |
	sed "s|^${module}/||")
bad=$(awk -F'\t' 'NR == FNR { if ($0 !~ /^#/ && NF) keep[$1] = 1; next }
	NF && !($1 in keep) { print $2 ": unreachable from every main in ./cmd: " $1 }' "$allow" - <<<"$found")
stale=$(awk -F'\t' 'NR == FNR { if (NF) seen[$1] = 1; next }
	$0 !~ /^#/ && NF && !($1 in seen) { print FILENAME ": " $1 " is reachable again (or gone): take it off the list" }' - "$allow" <<<"$found")
if [[ -n $bad || -n $stale ]]; then
	[[ -z $bad ]] || printf '%s\n' "$bad" "delete it, or move it into a _test.go file when only tests call it (hack/deadcode/allow.txt keeps the few kept on purpose, each with its reason)"
	[[ -z $stale ]] || printf '%s\n' "$stale"
	exit 1
fi
