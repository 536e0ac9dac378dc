// Package burn computes what GPU pods burn over time: the one rule of
// docs/budgets.md. A pod burns its charge (per family and dimension, after
// the init containers' collapse, as it changes) from its first container's
// start until its containers end or it is deleted; a claim burns while a
// running pod uses it. Amounts are unit-milliseconds (device-, MiB- or
// core-percent-milliseconds). The package also computes budget windows
// (calendar windows in a time zone, DST included, and rolling ones) and
// turns a budget's resource-hours into amounts.
//
// The package is pure: no I/O, no clocks, no globals; it imports only
// pkg/effective of the project, so the webhook, the elected accrual and the
// command line compute the same numbers.
package burn
