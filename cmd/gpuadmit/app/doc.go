// Package app is the gpuadmit command line: Run builds the root cobra
// command and executes one command line; Invocation says whether the binary
// runs as gpuadmit or as the kubectl plugin `kubectl gpuadmit`. Package main
// only reads the process's arguments, streams and build stamp and hands them
// here.
//
// Each verb is its own package, with its command, its report and its
// tables: effective, eval, usage, top (with --what-if), audit, policy (test,
// verify, schema) and version. What several verbs share is named for its
// concept: cmdline (the run's streams and flags, usage errors, exit codes),
// output (-o and the tables' cells), source (a dump or the live cluster),
// setup (the configuration and policies a command decides with) and view
// (the state usage, top and audit show). The tests of a verb's command line
// run through apptest; fixtures holds the builders they share.
package app
