package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// effectiveOutput is the JSON of DESIGN.md section 5 for `gpuadmit effective`.
type effectiveOutput struct {
	Effective  effective.Vector  `json:"effective"`
	Containers []containerOutput `json:"containers"`
	Unresolved []string          `json:"unresolved"`
}

type containerOutput struct {
	Name string         `json:"name"`
	Role effective.Role `json:"role"`
	effective.Vector
}

func runEffective(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuadmit effective", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "pod manifest (YAML or JSON; - for standard input)")
	cfgPath := fs.String("config", "", "gpuadmit/HAMi device config file (default: HAMi's defaults)")
	devMem := fs.Int64("device-memory", 0, "device memory in MiB used to resolve memory percentages (0: unresolved)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *file == "" || fs.NArg() > 0 {
		return fail(stderr, "effective", errors.New("usage: gpuadmit effective -f POD.yaml [--config CFG] [--device-memory MiB]"))
	}
	if *devMem < 0 {
		return fail(stderr, "effective", fmt.Errorf("--device-memory must be >= 0, got %d", *devMem))
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return fail(stderr, "effective", err)
	}
	objs, err := manifest.ReadFile(*file, stdin)
	if err != nil {
		return fail(stderr, "effective", err)
	}
	if len(objs.Pods) == 0 {
		return fail(stderr, "effective", fmt.Errorf("%s: no Pod found", *file))
	}
	pod := objs.Pods[0]
	d, err := effective.Compute(pod, cfg.NVIDIA, effective.Options{DeviceMemoryMiB: *devMem})
	if err != nil {
		return fail(stderr, "effective", fmt.Errorf("pod %q: %w", pod.Name, err))
	}
	out := effectiveOutput{Effective: d.Effective, Containers: make([]containerOutput, 0, len(d.Containers)), Unresolved: []string{}}
	for _, c := range d.Containers {
		out.Containers = append(out.Containers, containerOutput{Name: c.Name, Role: c.Role, Vector: c.Total})
		if c.Unresolved {
			out.Unresolved = append(out.Unresolved, fmt.Sprintf(
				"container %q: memory is %d%% of a device whose size is unknown (pass --device-memory MiB); its gpumem is not counted",
				c.Name, c.MemPercent))
		}
	}
	if err := writeJSON(stdout, out); err != nil {
		return fail(stderr, "effective", err)
	}
	return 0
}

func loadConfig(path string) (config.Config, error) {
	if path == "" {
		return config.Default(), nil
	}
	return config.Load(path)
}
