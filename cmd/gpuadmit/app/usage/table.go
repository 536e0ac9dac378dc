package usage

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/view"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

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
	if err := printTeams(w, u.Teams); err != nil {
		return err
	}
	if err := view.PrintBudgets(w, u.Budgets); err != nil {
		return err
	}
	if len(u.Nodes) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := output.NewTable(w)
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
			row := fmt.Sprintf("%s\t%s\t%d\t%s\t%s", node, id, d.Used.GPU, output.OfLimit(d.Used.MemMiB, mem), output.OfLimit(d.Used.Cores, cores))
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
	t := output.NewTable(w)
	cols := namespaceColumns{wide: wide}
	for _, ns := range u.Namespaces {
		cols.byFamily = cols.byFamily || len(ns.Families) > 0
		cols.claims = cols.claims || ns.Claims > 0
	}
	fmt.Fprintln(t, cols.header())
	for _, name := range slices.Sorted(maps.Keys(u.Namespaces)) {
		ns := u.Namespaces[name]
		if !cols.byFamily || len(ns.Families) == 0 || !ns.Used.IsZero() || ns.Limits != (Limits{}) {
			fmt.Fprintln(t, cols.row(name, output.OrDash(u.primary), ns, ns.Used, ns.Limits, ns.Quotas, strconv.Itoa(len(ns.Unresolved))))
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
func (c namespaceColumns) row(name, family string, ns usageNamespace, used effective.Vector, l Limits,
	quotas map[string]Limits, unresolved string) string {
	cells := []string{name}
	if c.byFamily {
		cells = append(cells, family)
	}
	cells = append(cells, strconv.Itoa(ns.Pods))
	if c.claims {
		cells = append(cells, strconv.Itoa(ns.Claims))
	}
	cells = append(cells, output.OfLimit(used.GPU, l.GPU), output.OfLimit(used.MemMiB, l.MemMiB), output.OfLimit(used.Cores, l.Cores))
	if c.wide {
		cells = append(cells, output.OrDash(strings.Join(slices.Sorted(maps.Keys(quotas)), ",")), unresolved)
	}
	return strings.Join(cells, "\t")
}
