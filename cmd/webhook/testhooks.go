//go:build gpuadmit_testhooks

package main

import "github.com/gpuadmit/gpuadmit/internal/cluster/testhooks"

// A test build (go build -tags gpuadmit_testhooks, as
// internal/cluster/replicas builds its replicas) has the fault-injection
// flags of internal/cluster/testhooks.
func init() { testHooks = testhooks.Register }
