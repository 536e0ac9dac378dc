//go:build tools

// Package codegen pins controller-gen, which `make generate` runs: the
// GPUUsage CRD and the deepcopy functions are generated from the Go types of
// pkg/apis.
package codegen

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
