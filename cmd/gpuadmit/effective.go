package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

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

func (c *cli) effectiveCmd() *cobra.Command {
	var o struct {
		in     manifestFlags
		config string
		devMem int64
	}
	cmd := &cobra.Command{
		Use:   "effective -f POD.yaml [--config CFG] [--device-memory MiB]",
		Short: "Print a pod's effective GPU demand",
		Long: `Print the effective GPU demand of each pod of the manifests: the maximum of
its steady state and its init-container peak, per container role. -f
repeats and takes directories (-R: with their subdirectories), as in
kubectl; the objects of all are printed together.`,
		Example: `  gpuadmit effective -f pod.yaml
  kubectl get deploy vllm -o yaml | gpuadmit effective -f -
  gpuadmit effective -f a.yaml -f manifests/ -R`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.in.required(cmd); err != nil {
				return err
			}
			if o.devMem < 0 {
				return usageErrorf("--device-memory must be >= 0, got %d", o.devMem)
			}
			return c.effective(o.in, o.config, o.devMem)
		},
	}
	filenameFlag(cmd, &o.in, "pod or workload manifests")
	configFlag(cmd, &o.config, "every default")
	cmd.Flags().Int64Var(&o.devMem, "device-memory", 0, "device memory in MiB used to resolve memory percentages (0: unresolved)")
	return cmd
}

func (c *cli) effective(in manifestFlags, cfgPath string, devMem int64) error {
	cfg, err := loadConfig(cfgPath, c.stderr)
	if err != nil {
		return err
	}
	objs, err := in.read(c.stdin)
	if err != nil {
		return err
	}
	var out effectiveObjects
	var errs []error
	for _, w := range objs.Workloads {
		o, err := effectiveOf(w, config.Settings(cfg), devMem)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %q: %w", w.Kind, w.Name, err))
			continue
		}
		out.Objects = append(out.Objects, effectiveObject{objectRef: refOf(w), effectiveOutput: o})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	var doc any = out
	if onePod(objs) {
		doc = out.Objects[0].effectiveOutput
	}
	return writeJSON(c.stdout, doc)
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
func effectiveOf(w *manifest.Workload, s effective.Family, devMem int64) (effectiveOutput, error) {
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
func loadConfig(path string, stderr io.Writer) (*config.Configuration, error) {
	if path == "" {
		return config.Default(), nil
	}
	cfg, ignored, err := config.Load(path)
	if w := config.IgnoredWarning(ignored); w != "" {
		fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", path, w)
	}
	return cfg, err
}
