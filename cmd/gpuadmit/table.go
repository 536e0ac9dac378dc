package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// newTable is a writer of kubectl-style columns (kubectl's tabwriter
// settings).
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// ofLimit is "used/limit", the limit "-" when there is none.
func ofLimit(used int64, limit *int64) string {
	if limit == nil {
		return strconv.FormatInt(used, 10) + "/-"
	}
	return fmt.Sprintf("%d/%d", used, *limit)
}

// printUsage writes `usage -o table`: a row per namespace (used/limit),
// then, when there are GPU nodes, a row per device (used/capacity).
func printUsage(w io.Writer, u usageOutput) error {
	t := newTable(w)
	fmt.Fprintln(t, "NAMESPACE\tPODS\tGPU\tGPUMEM(MiB)\tGPUCORES")
	for _, name := range slices.Sorted(maps.Keys(u.Namespaces)) {
		ns := u.Namespaces[name]
		fmt.Fprintf(t, "%s\t%d\t%s\t%s\t%s\n", name, ns.Pods,
			ofLimit(ns.Used.GPU, ns.Limits.GPU), ofLimit(ns.Used.MemMiB, ns.Limits.MemMiB), ofLimit(ns.Used.Cores, ns.Limits.Cores))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if len(u.Nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t = newTable(w)
	fmt.Fprintln(t, "NODE\tDEVICE\tGPU\tGPUMEM(MiB)\tGPUCORES")
	for _, node := range slices.Sorted(maps.Keys(u.Nodes)) {
		devs := u.Nodes[node].Devices
		for _, id := range slices.Sorted(maps.Keys(devs)) {
			d := devs[id]
			var mem, cores *int64
			if d.Capacity != nil {
				mem, cores = &d.Capacity.MemMiB, &d.Capacity.Cores
			}
			fmt.Fprintf(t, "%s\t%s\t%d\t%s\t%s\n", node, id, d.Used.GPU, ofLimit(d.Used.MemMiB, mem), ofLimit(d.Used.Cores, cores))
		}
	}
	return t.Flush()
}

// printEval writes `eval -o table`: a row per object (the demand of one of
// its pods, how many of its pods would be admitted), then its denials and
// warnings.
func printEval(w io.Writer, out evalObjects) error {
	t := newTable(w)
	fmt.Fprintln(t, "KIND\tNAMESPACE\tNAME\tALLOWED\tADMITTED\tGPU\tGPUMEM(MiB)\tGPUCORES")
	for _, o := range out.Objects {
		fmt.Fprintf(t, "%s\t%s\t%s\t%t\t%d/%d\t%d\t%d\t%d\n", o.Kind, o.evaluatedIn, o.Name, o.Allowed,
			o.Admitted, max(o.Replicas, 0), o.Effective.GPU, o.Effective.MemMiB, o.Effective.Cores)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	var notes []string
	for _, o := range out.Objects {
		for _, d := range o.Denials {
			notes = append(notes, fmt.Sprintf("%s %s/%s denied: %s", o.Kind, o.evaluatedIn, o.Name, d))
		}
		for _, m := range o.Warnings {
			notes = append(notes, fmt.Sprintf("%s %s/%s warning: %s", o.Kind, o.evaluatedIn, o.Name, m))
		}
	}
	if len(notes) > 0 {
		_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
		return err
	}
	return nil
}
