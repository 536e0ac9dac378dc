// Package source is where a command's cluster comes from: a 'kubectl get
// -o yaml' dump (--state) or the live cluster that kubectl's connection
// flags name, read into a ledger (with the DRA objects, the reservations and
// the user to decide as), with a progress line on a terminal when the read
// is slow and one line naming the server when no cluster answers.
package source
