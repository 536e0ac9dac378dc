//go:build tools

// Package lint pins the linter `make lint` runs: golangci-lint, which
// bundles staticcheck, govet, revive, gocritic, depguard and the rest that
// .golangci.yml at the repository root enables.
package lint

import (
	_ "github.com/golangci/golangci-lint/v2/cmd/golangci-lint"
)
