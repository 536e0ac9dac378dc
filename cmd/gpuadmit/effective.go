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

// effectiveOutput is the command-line contract's JSON for `gpuadmit
// effective` of one Pod (docs/design.md).
type effectiveOutput struct {
	Effective  effective.Vector  `json:"effective"`
	Containers []containerOutput `json:"containers"`
	Unresolved []string          `json:"unresolved"`
}

// objectRef names one object of a manifest with several.
type objectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Replicas is the number of pods the object makes (-1: one per node).
	Replicas int64 `json:"replicas"`
}

// effectiveObjects is the output for a manifest that is not exactly one Pod.
type effectiveObjects struct {
	Objects []effectiveObject `json:"objects"`
}

type effectiveObject struct {
	objectRef
	effectiveOutput
}

type containerOutput struct {
	Name string         `json:"name"`
	Role effective.Role `json:"role"`
	effective.Vector
}

func runEffective(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gpuadmit effective", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "pod or workload manifest (YAML or JSON; - for standard input)")
	cfgPath := fs.String("config", "", "configuration file, the webhook's (or a HAMi device config); default: every default")
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
	cfg, err := loadConfig(*cfgPath, stderr)
	if err != nil {
		return fail(stderr, "effective", err)
	}
	objs, err := manifest.ReadFile(*file, stdin)
	if err != nil {
		return fail(stderr, "effective", err)
	}
	if len(objs.Workloads) == 0 {
		return fail(stderr, "effective", fmt.Errorf("%s: no Pod or workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) found", *file))
	}
	var out effectiveObjects
	var errs []error
	for _, w := range objs.Workloads {
		o, err := effectiveOf(w, cfg.Devices, *devMem)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", w.Kind, w.Name, err))
			continue
		}
		out.Objects = append(out.Objects, effectiveObject{objectRef: refOf(w), effectiveOutput: o})
	}
	if len(errs) > 0 {
		return fail(stderr, "effective", errors.Join(errs...))
	}
	var doc any = out
	if onePod(objs) {
		doc = out.Objects[0].effectiveOutput
	}
	if err := writeJSON(stdout, doc); err != nil {
		return fail(stderr, "effective", err)
	}
	return 0
}

// onePod reports whether the manifest is exactly one Pod: its output keeps
// the single-object shape of the command-line contract.
func onePod(objs *manifest.Objects) bool {
	return len(objs.Workloads) == 1 && objs.Workloads[0].Kind == "Pod"
}

func refOf(w *manifest.Workload) objectRef {
	return objectRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Replicas: w.Replicas}
}

// effectiveOf computes the effective demand of one pod of w; invalid values
// are named as the manifest wrote them.
func effectiveOf(w *manifest.Workload, s effective.Settings, devMem int64) (effectiveOutput, error) {
	d, err := effective.Compute(w.Pod, s, effective.Options{DeviceMemoryMiB: devMem})
	var inv *effective.InvalidError
	if errors.As(err, &inv) {
		inv.AsWritten(w.Written)
	}
	if err != nil {
		return effectiveOutput{}, err
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
	return out, nil
}

// loadConfig reads the configuration file (every default when path is
// empty) exactly as the webhook does, and warns once on stderr about the
// keys it does not read.
func loadConfig(path string, stderr io.Writer) (config.Configuration, error) {
	if path == "" {
		return config.Default(), nil
	}
	cfg, ignored, err := config.Load(path)
	if w := config.IgnoredWarning(ignored); w != "" {
		fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", path, w)
	}
	return cfg, err
}
