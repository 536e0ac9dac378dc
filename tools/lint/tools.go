//go:build tools

// Package lint pins the linters `make lint` runs.
package lint

import _ "honnef.co/go/tools/cmd/staticcheck"
