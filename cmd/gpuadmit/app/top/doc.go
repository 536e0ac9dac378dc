// Package top is `gpuadmit top`: each namespace's charge against its
// limits and the pods and claims charged, sorted, with --what-if limits.
package top
