package main

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery/nvmlmock"
)

// newNVML returns the NVML implementation --nvml names: "real" (the driver's
// libnvidia-ml, loaded from library at Init) or "mock:<system>" (a go-nvml
// mock DGX server).
func newNVML(backend, library string) (nvml.Interface, error) {
	if backend == "real" {
		return nvml.New(nvml.WithLibraryPath(library)), nil
	}
	if system, ok := strings.CutPrefix(backend, "mock:"); ok {
		s, err := nvmlmock.New(system)
		if err != nil {
			return nil, fmt.Errorf("%w: --nvml %s: %w", errUsage, backend, err)
		}
		return s, nil
	}
	return nil, fmt.Errorf("%w: --nvml %q: want real or mock:<system> (%s)", errUsage, backend, mockSystems())
}

func mockSystems() string {
	return "mock:" + strings.Join(nvmlmock.Systems(), ", mock:")
}
