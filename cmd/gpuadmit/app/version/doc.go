// Package version is `gpuadmit version` and --version: the build stamp
// that package main hands down, else the build's VCS stamp.
package version
