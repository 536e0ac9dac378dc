// Package audit is `gpuadmit audit`: which namespaces are over a limit,
// from a dump or the live cluster (exit code 1 when one is).
package audit
