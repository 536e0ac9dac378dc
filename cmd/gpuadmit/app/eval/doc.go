// Package eval is `gpuadmit eval`: the webhook's decision for a CREATE of
// each pod and claim of the manifests, against a dump or the live cluster,
// with the policies and configuration of either (exit code 1 when one is
// denied). Evaluation is the decision that policy verify runs too.
package eval
