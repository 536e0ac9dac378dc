// Package app is the gpuadmit command line: Run builds the root cobra
// command with its verbs (effective, usage, top, audit, eval, policy,
// version, completion) and executes one command line; Invocation says
// whether the binary runs as gpuadmit or as the kubectl plugin `kubectl
// gpuadmit`. Package main only reads the process's arguments, streams and
// build stamp and hands them here.
package app
