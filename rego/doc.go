// Package rego holds gpuadmit's default admission policies, written in plain
// Rego v1 with their unit tests (*_test.rego), and embeds them so the policy
// engine ships them inside the binary. The files are the documentation of
// what the default policies do; `opa test rego/` and `go test ./rego/` run
// the same tests. The input document is described in docs/policy-input.md.
package rego
