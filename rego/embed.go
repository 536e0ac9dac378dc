package rego

import "embed"

// FS holds the default policies and their tests, at the root of the file system.
//
//go:embed *.rego
var FS embed.FS
