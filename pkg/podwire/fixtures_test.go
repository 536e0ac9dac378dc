package podwire

import "github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"

var (
	gpu   = testpod.GPU
	mem   = testpod.Mem
	cores = testpod.Cores
)
