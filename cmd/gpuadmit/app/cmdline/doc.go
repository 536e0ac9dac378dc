// Package cmdline is what every gpuadmit command shares of its command
// line: the run's streams, kubectl's connection flags and the build stamp
// (CLI), -f manifests and -R, --config, the argument checks, usage errors
// and exit codes, the file-kind hints of a wrong -f, and the suggestions for
// a mistyped command or flag.
package cmdline
