// Command gpuadmit is the command-line tool for policy authors and operators:
// it computes, offline, the numbers the admission webhook computes online.
//
//	gpuadmit effective -f POD.yaml [--config CFG] [--device-memory MiB]
//
// Output is JSON on stdout; errors go to stderr with exit code 2.
package main
