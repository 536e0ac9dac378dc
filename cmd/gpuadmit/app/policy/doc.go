// Package policy is `gpuadmit policy`: test (the Rego unit tests, as opa
// test), verify (a PolicySuite's cases decided by the webhook's decision) and
// schema (the policy input's JSON Schema).
package policy
