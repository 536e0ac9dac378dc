//go:build tools

// Package deadcode pins the dead-code finder `make lint` runs:
// golang.org/x/tools/cmd/deadcode, which reports every function no
// production main (./cmd/...) can reach.
package deadcode

import (
	_ "golang.org/x/tools/cmd/deadcode"
)
