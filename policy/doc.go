// Package policy is gpuadmit's Rego policy engine. It compiles the embedded
// default policies (package rego) together with operator overrides, runs the
// policy set's own unit tests (*_test.rego) before activating it, prepares
// the admission query once per set, and evaluates it concurrently for every
// admission request.
//
// A policy set is built from sources in order: the embedded policies first,
// then each Source given to Load. A module whose path (relative to its
// source) equals an earlier one replaces it; any other module is added. All
// modules are Rego v1. Modules contribute messages to the partial set rules
// data.gpuadmit.admission.deny and data.gpuadmit.admission.warn; the input
// document they read is described in docs/policy-input.md.
//
// Reloads are safe: a set that fails to read, parse or compile, or whose
// tests fail (or run past their time limit or the memory budget, see
// watchMemory), never replaces the active one. The failure is returned, logged,
// and kept in Status until a later load succeeds. Policies cannot reach the
// network or the clock: http.send, net.*, opa.runtime, time.now_ns, rand.intn
// and uuid.rfc4122 are not in the compiler's capabilities, so a module
// calling them does not compile.
package policy
