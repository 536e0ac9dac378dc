// Package view is the state usage, top and audit report on: --state, -n
// and -A read into a ledger, the setup, and the namespaces shown.
package view
