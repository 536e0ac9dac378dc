package app

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
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

// orDash is s, or "-" when s is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printUsage writes `usage -o table`: a row per namespace (used/limit),
// then, when there are GPU nodes, a row per device (used/capacity). When a
// namespace uses, reserves or limits a family other than the first, a
// FAMILY column tells them apart and each namespace has a row per family;
// when a namespace is charged ResourceClaims, a CLAIMS column counts them.
// wide adds each row's ResourceQuotas and unresolved pods, and each
// device's free memory and cores.
func printUsage(w io.Writer, u usageOutput, wide bool) error {
	if err := printNamespaces(w, u, wide); err != nil {
		return err
	}
	if len(u.Nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := newTable(w)
	header := "NODE\tDEVICE\tGPU\tGPUMEM(MiB)\tGPUCORES"
	if wide {
		header += "\tFREE-GPUMEM(MiB)\tFREE-GPUCORES"
	}
	fmt.Fprintln(t, header)
	for _, node := range slices.Sorted(maps.Keys(u.Nodes)) {
		devs := u.Nodes[node].Devices
		for _, id := range slices.Sorted(maps.Keys(devs)) {
			d := devs[id]
			var mem, cores *int64
			if d.Capacity != nil {
				mem, cores = &d.Capacity.MemMiB, &d.Capacity.Cores
			}
			row := fmt.Sprintf("%s\t%s\t%d\t%s\t%s", node, id, d.Used.GPU, ofLimit(d.Used.MemMiB, mem), ofLimit(d.Used.Cores, cores))
			if wide {
				row += "\t" + free(d.Used.MemMiB, mem) + "\t" + free(d.Used.Cores, cores)
			}
			fmt.Fprintln(t, row)
		}
	}
	return t.Flush()
}

// free is capacity less used, "-" when the capacity is not known.
func free(used int64, capacity *int64) string {
	if capacity == nil {
		return "-"
	}
	return strconv.FormatInt(*capacity-used, 10)
}

// namespaceColumns says which optional columns the namespace rows have.
type namespaceColumns struct {
	byFamily, claims, wide bool
}

// printNamespaces writes the namespace rows of `usage -o table`.
func printNamespaces(w io.Writer, u usageOutput, wide bool) error {
	t := newTable(w)
	cols := namespaceColumns{wide: wide}
	for _, ns := range u.Namespaces {
		cols.byFamily = cols.byFamily || len(ns.Families) > 0
		cols.claims = cols.claims || ns.Claims > 0
	}
	fmt.Fprintln(t, cols.header())
	for _, name := range slices.Sorted(maps.Keys(u.Namespaces)) {
		ns := u.Namespaces[name]
		if !cols.byFamily || len(ns.Families) == 0 || !ns.Used.IsZero() || ns.Limits != (usageLimits{}) {
			fmt.Fprintln(t, cols.row(name, orDash(u.primary), ns, ns.Used, ns.Limits, ns.Quotas, strconv.Itoa(len(ns.Unresolved))))
		}
		for _, f := range slices.Sorted(maps.Keys(ns.Families)) {
			uf := ns.Families[f]
			fmt.Fprintln(t, cols.row(name, f, ns, uf.Used, uf.Limits, uf.Quotas, "-"))
		}
	}
	return t.Flush()
}

// header is the header of the namespace rows: with a FAMILY column, with
// a CLAIMS column, wide.
func (c namespaceColumns) header() string {
	header := []string{"NAMESPACE", "PODS", "GPU", "GPUMEM(MiB)", "GPUCORES"}
	if c.claims {
		header = slices.Insert(header, 2, "CLAIMS")
	}
	if c.byFamily {
		header = slices.Insert(header, 1, "FAMILY")
	}
	if c.wide {
		header = append(header, "QUOTAS", "UNRESOLVED")
	}
	return strings.Join(header, "\t")
}

// row is the row of namespace name's family (written only with a FAMILY
// column): its used/limits, and, wide, its quotas and unresolved pods.
func (c namespaceColumns) row(name, family string, ns usageNamespace, used effective.Vector, l usageLimits,
	quotas map[string]usageLimits, unresolved string) string {
	cells := []string{name}
	if c.byFamily {
		cells = append(cells, family)
	}
	cells = append(cells, strconv.Itoa(ns.Pods))
	if c.claims {
		cells = append(cells, strconv.Itoa(ns.Claims))
	}
	cells = append(cells, ofLimit(used.GPU, l.GPU), ofLimit(used.MemMiB, l.MemMiB), ofLimit(used.Cores, l.Cores))
	if c.wide {
		cells = append(cells, orDash(strings.Join(slices.Sorted(maps.Keys(quotas)), ",")), unresolved)
	}
	return strings.Join(cells, "\t")
}

// printEval writes `eval -o table`: a row per object (the demand of one of
// its pods, how many of its pods would be admitted), then its denials and
// warnings; wide adds the number of each.
func printEval(w io.Writer, out evalObjects, wide bool) error {
	t := newTable(w)
	byFamily := false
	for _, o := range out.Objects {
		byFamily = byFamily || len(o.Families) > 0
	}
	header := "KIND\tNAMESPACE\tNAME\tALLOWED\tADMITTED\tGPU\tGPUMEM(MiB)\tGPUCORES"
	if byFamily {
		header = "KIND\tNAMESPACE\tNAME\tALLOWED\tADMITTED\tFAMILY\tGPU\tGPUMEM(MiB)\tGPUCORES"
	}
	if wide {
		header += "\tDENIALS\tWARNINGS"
	}
	fmt.Fprintln(t, header)
	for _, o := range out.Objects {
		object := fmt.Sprintf("%s\t%s\t%s\t%t\t%d/%d", o.Kind, o.evaluatedIn, o.Name, o.Allowed, o.Admitted, max(o.Replicas, 0))
		extra := ""
		if wide {
			extra = fmt.Sprintf("\t%d\t%d", len(o.Denials), len(o.Warnings))
		}
		if !byFamily {
			fmt.Fprintf(t, "%s\t%s%s\n", object, demandCells(o.Effective), extra)
			continue
		}
		if len(o.Families) == 0 || !o.Effective.IsZero() {
			fmt.Fprintf(t, "%s\t%s\t%s%s\n", object, orDash(out.primary), demandCells(o.Effective), extra)
		}
		for _, f := range slices.Sorted(maps.Keys(o.Families)) {
			fmt.Fprintf(t, "%s\t%s\t%s%s\n", object, f, demandCells(o.Families[f].Effective), extra)
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	return printNotes(w, evalNotes(out))
}

// demandCells are the GPU, GPUMEM(MiB) and GPUCORES cells of a demand.
func demandCells(v effective.Vector) string {
	return fmt.Sprintf("%d\t%d\t%d", v.GPU, v.MemMiB, v.Cores)
}

// printNotes writes the lines under a table, after an empty line.
func printNotes(w io.Writer, notes []string) error {
	if len(notes) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	return err
}

// evalNotes are the lines under `eval -o table`'s rows: each object's
// denials and warnings, then the explanations.
func evalNotes(out evalObjects) []string {
	var notes []string
	for _, o := range out.Objects {
		for _, d := range o.Denials {
			notes = append(notes, fmt.Sprintf("%s %s/%s denied: %s", o.Kind, o.evaluatedIn, o.Name, d))
		}
		for _, m := range o.Warnings {
			notes = append(notes, fmt.Sprintf("%s %s/%s warning: %s", o.Kind, o.evaluatedIn, o.Name, m))
		}
	}
	for _, o := range out.Objects {
		if o.Explanation != nil {
			notes = append(notes, fmt.Sprintf("%s %s/%s explained:", o.Kind, o.evaluatedIn, o.Name))
			notes = append(notes, explanationLines(o.Explanation, subjectOf(o.Kind))...)
		}
	}
	return notes
}

// subjectOf is what the explanation calls an object of kind: a claim, or
// (for the pods of every other kind) a pod.
func subjectOf(kind string) string {
	if kind == "ResourceClaim" {
		return "claim"
	}
	return "pod"
}

// explanationLines says, for each message, the rule that produced it and
// the rules that passed it on, then each limit against the usage after
// the pod (or claim: subject).
func explanationLines(x *decision.Explanation, subject string) []string {
	var lines []string
	for _, m := range []struct {
		what string
		msgs []decision.Explained
	}{{"denied", x.Denials}, {"warning", x.Warnings}} {
		for _, e := range m.msgs {
			lines = append(lines, fmt.Sprintf("  %s: %s", m.what, e.Message))
			for i, r := range e.Rules {
				how := "by "
				if i > 0 {
					how = "via"
				}
				lines = append(lines, fmt.Sprintf("    %s %s at %s:%d", how, r.Rule, r.File, r.Line))
			}
		}
	}
	for _, l := range x.Limits {
		verdict := "within the limit"
		if l.Exceeded {
			verdict = "EXCEEDED"
		}
		lines = append(lines, fmt.Sprintf("  limit %s: %d used + %d reserved + %d this %s = %d of %d (ResourceQuota %q %s): %s",
			l.Resource, l.Used, l.Reserved, l.Pod, subject, l.After, l.Limit, l.Quota, l.Key, verdict))
	}
	if len(x.Limits) == 0 {
		lines = append(lines, "  no ResourceQuota limits a managed resource in this namespace")
	}
	return lines
}
