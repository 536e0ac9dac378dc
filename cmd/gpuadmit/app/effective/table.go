package effective

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// printEffective writes `effective -o table`: a row per object (the
// demand of one of its pods; a row per family when an object asks for a
// family other than the first, with a FAMILY column), then the containers
// whose memory is unresolved. wide adds each row's containers (name:role).
func printEffective(w io.Writer, out effectiveObjects, wide bool) error {
	t := output.NewTable(w)
	byFamily := false
	for _, o := range out.Objects {
		byFamily = byFamily || len(o.Families) > 0
	}
	header := []string{"KIND", "NAMESPACE", "NAME", "REPLICAS", "GPU", "GPUMEM(MiB)", "GPUCORES"}
	if byFamily {
		header = slices.Insert(header, 4, "FAMILY")
	}
	if wide {
		header = append(header, "CONTAINERS")
	}
	fmt.Fprintln(t, strings.Join(header, "\t"))
	var notes []string
	for _, o := range out.Objects {
		object := fmt.Sprintf("%s\t%s\t%s\t%s", o.Kind, output.OrDash(o.Namespace), o.Name, replicasCell(o.Replicas))
		row := func(family string, f familyEffective) {
			cells := []string{object}
			if byFamily {
				cells = append(cells, family)
			}
			cells = append(cells, output.DemandCells(f.Effective))
			if wide {
				cells = append(cells, containersCell(f.Containers))
			}
			fmt.Fprintln(t, strings.Join(cells, "\t"))
			for _, u := range f.Unresolved {
				notes = append(notes, fmt.Sprintf("%s %s unresolved: %s", o.Kind, objectName(o.Namespace, o.Name), u))
			}
		}
		if !byFamily || len(o.Families) == 0 || !o.Effective.IsZero() {
			row(output.OrDash(out.primary), o.familyEffective)
		}
		for _, f := range slices.Sorted(maps.Keys(o.Families)) {
			row(f, o.Families[f])
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	return output.PrintNotes(w, notes)
}

// replicasCell is the number of pods an object makes, "per-node" for a
// DaemonSet's.
func replicasCell(n int64) string {
	if n == manifest.PerNode {
		return "per-node"
	}
	return strconv.FormatInt(n, 10)
}

// containersCell lists containers as name:role.
func containersCell(cs []containerOutput) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name + ":" + string(c.Role)
	}
	return output.OrDash(strings.Join(names, ","))
}

// objectName is namespace/name, or name without a namespace.
func objectName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
