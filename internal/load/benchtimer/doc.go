// Package benchtimer records, for benchmarks, each iteration's wall time and
// (on a sample of iterations: reading it is a system call) the CPU time of
// the benchmark's thread, and reports their p99 and the mean CPU time: on a shared machine the wall time includes waiting for a
// CPU, the thread's CPU time does not.
package benchtimer
