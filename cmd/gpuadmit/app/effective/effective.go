package effective

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// effectiveOutput is the command-line contract's JSON for `gpuadmit
// effective` of one Pod (docs/design.md): the first family's (nvidia's)
// demand at the first level, as before families, and every other family the
// pod asks for under families, by name, in the same shape.
type effectiveOutput struct {
	familyEffective
	Families map[string]familyEffective `json:"families,omitempty"`
}

// familyEffective is one family's effective demand, its containers and
// those whose memory is unresolved.
type familyEffective struct {
	Effective  effective.Vector  `json:"effective"`
	Containers []containerOutput `json:"containers"`
	Unresolved []string          `json:"unresolved"`
}

// ObjectRef names one object of a manifest with several.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Replicas is the number of pods the object makes (-1: one per node).
	Replicas int64 `json:"replicas"`
}

// effectiveObjects is the output for a manifest that is not exactly one Pod.
type effectiveObjects struct {
	Objects []effectiveObject `json:"objects"`
	// primary is the family at the first level of each object's demand.
	primary string
}

type effectiveObject struct {
	ObjectRef
	effectiveOutput
}

type containerOutput struct {
	Name string         `json:"name"`
	Role effective.Role `json:"role"`
	// Family names the family of a container listed under families (the
	// first level's containers are the first family's and carry none).
	Family string `json:"family,omitempty"`
	effective.Vector
}

// NewCmd is the `gpuadmit effective` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var o struct {
		in             cmdline.ManifestFlags
		config, output string
		devMem         int64
	}
	cmd := &cobra.Command{
		Use:   "effective -f POD.yaml [--config CFG] [--device-memory MiB] [-o table|wide|json|yaml|jsonpath=TEMPLATE]",
		Short: "Print the effective GPU demand of a pod, workload or ResourceClaim",
		Long: `Print the effective GPU demand of each pod of the manifests: the maximum of
its steady state and its init-container peak, per container role, with
the claims of its ResourceClaimTemplates (resourceClaimTemplateName) that
the manifests hold; and of each ResourceClaim (resource.k8s.io/v1) of the
manifests: the devices of the DeviceClasses the configuration governs it
asks for, one container per request, whole devices sized by the
manifests' ResourceSlices, else by --device-memory. -f repeats and takes directories
(-R: with their subdirectories), as in kubectl; the objects of all are
printed together, a row each in the table (-o wide adds its containers).
The nvidia family's demand is at the first level; that of every other
device family the configuration governs and the pod asks for is under
"families", by name (a FAMILY column in the table).`,
		Example: `  gpuadmit effective -f pod.yaml
  kubectl get deploy vllm -o yaml | gpuadmit effective -f - -o json
  gpuadmit effective -f a.yaml -f manifests/ -R -o wide`,
		Args: cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.in.Required(cmd); err != nil {
				return err
			}
			if o.devMem < 0 {
				return cmdline.UsageErrorf("--device-memory must be >= 0, got %d", o.devMem)
			}
			out, err := output.ParseCmd(cmd, o.output, output.TableFormats)
			if err != nil {
				return err
			}
			return run(cmd, c, o.in, o.config, o.devMem, out)
		},
	}
	cmdline.FilenameFlag(cmd, &o.in, "pod, workload or ResourceClaim manifests")
	output.Flag(cmd, &o.output, output.FormatTable, output.TableFormats)
	cmdline.ConfigFlag(cmd, &o.config, "every default")
	cmd.Flags().Int64Var(&o.devMem, "device-memory", 0, "device memory in MiB used to resolve memory percentages (0: unresolved)")
	return cmd
}

// run reads the manifests and prints each object's effective demand.
func run(cmd *cobra.Command, c *cmdline.CLI, in cmdline.ManifestFlags, cfgPath string, devMem int64, format output.Output) error {
	cfg, err := setup.LoadConfig(cfgPath, c.Stderr)
	if err != nil {
		return err
	}
	objs, readErr := in.Read(c.Stdin)
	if objs == nil {
		return readErr
	}
	ch, err := source.ChargingOf(cfg)
	if err != nil {
		return err
	}
	d := demander{ctx: cmd.Context(), Charging: ch, devMem: devMem, templates: objs.ClaimTemplates, inv: ch.Claims.NewInventory(objs.Slices)}
	out := effectiveObjects{primary: ch.Families[0].Name}
	errs := cmdline.Unwrapped(readErr)
	for _, w := range objs.Workloads {
		o, err := d.effective(w)
		if err != nil {
			errs = append(errs, ObjectError(w, err))
			continue
		}
		out.Objects = append(out.Objects, effectiveObject{ObjectRef: RefOf(w), effectiveOutput: o})
	}
	if len(out.Objects) == 0 {
		return errors.Join(errs...)
	}
	var doc any = out
	if OnePod(objs) && !format.Listed() {
		doc = out.Objects[0].effectiveOutput
	}
	if err := format.Write(c.Stdout, doc, func(w io.Writer, wide bool) error { return printEffective(w, out, wide) }); err != nil {
		return err
	}
	if len(errs) > 0 {
		return cmdline.Failed(cmd, c.Stderr, errs)
	}
	return nil
}

// ObjectError is err of w's object, naming its file, document, kind,
// namespace and name.
func ObjectError(w *manifest.Workload, err error) error {
	name := w.Name
	if w.Namespace != "" {
		name = w.Namespace + "/" + name
	}
	if w.Source == "" {
		return fmt.Errorf("%s %s: %w", w.Kind, name, err)
	}
	return fmt.Errorf("%s: %s %s: %w", w.Source, w.Kind, name, err)
}

// OnePod reports whether the manifest is exactly one Pod: its output keeps
// the single-object shape of the command-line contract.
func OnePod(objs *manifest.Objects) bool {
	return len(objs.Workloads) == 1 && objs.Workloads[0].Kind == "Pod"
}

// RefOf names w's object: its kind, namespace, name and replicas.
func RefOf(w *manifest.Workload) ObjectRef {
	return ObjectRef{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Replicas: w.Replicas}
}

// podDemands are the demands of one pod of w in each family of fams, the
// first always.
func podDemands(w *manifest.Workload, fams []effective.Family, devMem int64) (effective.Demands, error) {
	primary := fams[0]
	opts := map[string]effective.Options{primary.Name: {DeviceMemoryMiB: devMem}}
	ds, err := effective.ComputeAll(w.Pod, fams, opts)
	if err == nil && ds.Of(primary.Name) == nil {
		// The pod asks for none of the first family: its containers are
		// still listed, with zero demands, as before families.
		var d *effective.Demand
		if d, err = effective.Compute(w.Pod, primary, opts[primary.Name]); err == nil {
			ds = append(effective.Demands{d}, ds...)
		}
	}
	var inv *effective.InvalidError
	if errors.As(err, &inv) {
		inv.AsWritten(w.Written)
	}
	return ds, err
}

// effectiveReport renders demands in the command-line contract's shape:
// the demand of family primary at the first level (zero with no containers
// when ds lacks it), every other family's under families, with only the
// containers that name that family.
func effectiveReport(ds effective.Demands, primary string) effectiveOutput {
	var out effectiveOutput
	if d := ds.Of(primary); d != nil {
		out.familyEffective = familyReport(d, false)
	} else {
		out.familyEffective = familyEffective{Containers: []containerOutput{}, Unresolved: []string{}}
	}
	for _, d := range ds {
		if d.Family == primary {
			continue
		}
		if out.Families == nil {
			out.Families = map[string]familyEffective{}
		}
		out.Families[d.Family] = familyReport(d, true)
	}
	return out
}

// familyReport is one family's part of the output; other (a family under
// families) lists only the containers naming the family, each with its
// family's name.
func familyReport(d *effective.Demand, other bool) familyEffective {
	out := familyEffective{Effective: d.Effective, Containers: make([]containerOutput, 0, len(d.Containers)), Unresolved: []string{}}
	for _, c := range d.Containers {
		if other && !c.Managed {
			continue
		}
		co := containerOutput{Name: c.Name, Role: c.Role, Vector: c.Total}
		if other {
			co.Family = d.Family
		}
		out.Containers = append(out.Containers, co)
		if !c.Unresolved {
			continue
		}
		if other {
			out.Unresolved = append(out.Unresolved, fmt.Sprintf(
				"container %q: memory is %d%% of a device of family %s whose size is unknown; its gpumem is not counted",
				c.Name, c.MemPercent, d.Family))
		} else {
			out.Unresolved = append(out.Unresolved, fmt.Sprintf(
				"container %q: memory is %d%% of a device whose size is unknown (pass --device-memory MiB); its gpumem is not counted",
				c.Name, c.MemPercent))
		}
	}
	return out
}

// Rows are the objects (-o name, custom-columns).
func (e effectiveObjects) Rows() []output.Row {
	rows := make([]output.Row, len(e.Objects))
	for i, o := range e.Objects {
		rows[i] = output.Row{Kind: o.Kind, Name: o.Name, Object: o}
	}
	return rows
}
