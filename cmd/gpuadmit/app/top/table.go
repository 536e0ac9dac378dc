package top

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/usage"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// topColumns says which optional columns top's tables have.
type topColumns struct {
	byFamily, claims, pod, user, wide bool
}

// printTop writes `top -o table`: a row per namespace (and family), then
// a row per pod and claim, then the what-ifs. A cell is used/limit, or
// used+reserved/limit when something is reserved; % is used + reserved
// of the limit.
func printTop(w io.Writer, t topOutput, wide bool) error {
	cols, charges := topColumnsOf(t, wide)
	tw := output.NewTable(w)
	fmt.Fprintln(tw, cols.namespaceHeader())
	for _, n := range t.Namespaces {
		fams := n.families(t.primary)
		for _, f := range familyOrder(fams, t.primary) {
			if f != t.primary || !cols.byFamily || n.showsPrimary() {
				fmt.Fprintln(tw, cols.namespaceRow(n, f, fams[f]))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if charges {
		if err := printCharges(w, t, cols); err != nil {
			return err
		}
	}
	if err := printTeams(w, t.teams); err != nil {
		return err
	}
	if err := printBudgetBurns(w, t.Budgets); err != nil {
		return err
	}
	return output.PrintNotes(w, append(whatIfNotes(t.WhatIf), budgetWhatIfNotes(t.BudgetWhatIf)...))
}

// topColumnsOf is the optional columns t's tables need, and whether
// there is any charge to print.
func topColumnsOf(t topOutput, wide bool) (topColumns, bool) {
	cols := topColumns{wide: wide}
	charges := false
	for _, n := range t.Namespaces {
		cols.byFamily = cols.byFamily || len(n.Families) > 0
		cols.claims = cols.claims || n.Claims > 0
		for _, c := range n.Charges {
			charges = true
			cols.pod = cols.pod || c.Pod != ""
			cols.user = cols.user || (wide && c.User != "")
			cols.byFamily = cols.byFamily || len(c.Families) > 0
		}
	}
	return cols, charges
}

// showsPrimary reports whether a table with a FAMILY column has a row of
// n's first family: unless n only uses, reserves or limits other ones.
func (n topNamespace) showsPrimary() bool {
	return len(n.Families) == 0 || !n.Used.IsZero() || !n.Reserved.IsZero() || n.Limits != (usage.Limits{})
}

func (c topColumns) namespaceHeader() string {
	h := []string{"NAMESPACE"}
	if c.byFamily {
		h = append(h, "FAMILY")
	}
	h = append(h, "PODS")
	if c.claims {
		h = append(h, "CLAIMS")
	}
	h = append(h, "GPU", "GPU%", "GPUMEM(MiB)", "GPUMEM%", "GPUCORES", "GPUCORES%", "OVER")
	if c.wide {
		h = append(h, "QUOTAS", "UNRESOLVED")
	}
	return strings.Join(h, "\t")
}

func (c topColumns) namespaceRow(n topNamespace, family string, u topUsage) string {
	cells := []string{n.Name}
	if c.byFamily {
		cells = append(cells, family)
	}
	cells = append(cells, strconv.Itoa(n.Pods))
	if c.claims {
		cells = append(cells, strconv.Itoa(n.Claims))
	}
	cells = append(cells,
		chargedCell(u.Used.GPU, u.Reserved.GPU, u.Limits.GPU), percentCell(u.Percent.GPU),
		chargedCell(u.Used.MemMiB, u.Reserved.MemMiB, u.Limits.MemMiB), percentCell(u.Percent.MemMiB),
		chargedCell(u.Used.Cores, u.Reserved.Cores, u.Limits.Cores), percentCell(u.Percent.Cores),
		overCell(n.Over, family))
	if c.wide {
		cells = append(cells, output.OrDash(strings.Join(n.Quotas, ",")), strconv.Itoa(len(n.Unresolved)))
	}
	return strings.Join(cells, "\t")
}

// printCharges writes the rows of the namespaces' pods and claims.
func printCharges(w io.Writer, t topOutput, c topColumns) error {
	fmt.Fprintln(w)
	tw := output.NewTable(w)
	h := []string{"NAMESPACE"}
	if c.byFamily {
		h = append(h, "FAMILY")
	}
	h = append(h, "KIND", "NAME")
	if c.pod {
		h = append(h, "POD")
	}
	if c.user {
		h = append(h, "USER")
	}
	fmt.Fprintln(tw, strings.Join(append(h, "NODE", "STATE", "GPU", "GPUMEM(MiB)", "GPUCORES"), "\t"))
	for _, n := range t.Namespaces {
		for _, ch := range n.Charges {
			fams := withKey(maps.Clone(ch.Families), t.primary, ch.Used)
			for _, f := range familyOrder(fams, t.primary) {
				if f == t.primary && len(ch.Families) > 0 && ch.Used.IsZero() {
					continue
				}
				fmt.Fprintln(tw, c.chargeRow(n.Name, f, ch, fams[f]))
			}
		}
	}
	return tw.Flush()
}

func (c topColumns) chargeRow(ns, family string, ch topCharge, v effective.Vector) string {
	cells := []string{ns}
	if c.byFamily {
		cells = append(cells, family)
	}
	cells = append(cells, ch.Kind, ch.Name)
	if c.pod {
		cells = append(cells, output.OrDash(ch.Pod))
	}
	if c.user {
		cells = append(cells, output.OrDash(ch.User))
	}
	cells = append(cells, output.OrDash(ch.Node), output.OrDash(string(ch.State)), output.DemandCells(v))
	return strings.Join(cells, "\t")
}

// familyOrder is the families of m, primary first, the others by name.
func familyOrder[V any](m map[string]V, primary string) []string {
	others := slices.Sorted(maps.Keys(m))
	others = slices.DeleteFunc(others, func(f string) bool { return f == primary })
	return append([]string{primary}, others...)
}

// chargedCell is used/limit, used+reserved/limit when reserved is not 0.
func chargedCell(used, reserved int64, limit *int64) string {
	if reserved == 0 {
		return output.OfLimit(used, limit)
	}
	return strconv.FormatInt(used, 10) + "+" + output.OfLimit(reserved, limit)
}

func percentCell(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10) + "%"
}

// overCell names the resources of family whose limit is passed, a
// what-if's marked.
func overCell(over []OverLimit, family string) string {
	var names []string
	for _, o := range over {
		if o.Family == family {
			n := o.Resource
			if o.WhatIf {
				n += "(what-if)"
			}
			names = append(names, n)
		}
	}
	return output.OrDash(strings.Join(names, ","))
}

// whatIfNotes say which limits are what-ifs, and what they replace.
func whatIfNotes(ws []whatIfShown) []string {
	var notes []string
	for _, w := range ws {
		actual := "none"
		switch {
		case w.Actual != nil:
			actual = strconv.FormatInt(*w.Actual, 10)
		case w.ActualInvalid:
			actual = "an invalid quota value (blocking)"
		}
		who := "namespace " + w.Namespace
		if w.Quota != "" {
			who = "GPUClusterQuota " + w.Quota
		}
		notes = append(notes, fmt.Sprintf("what-if: %s, %s: limit %d instead of %s", who, w.Resource, w.Limit, actual))
	}
	return notes
}

// percent is charged as a percentage of limit, rounded down (saturating);
// nil without a limit or with a limit of 0.
func percent(charged int64, limit *int64) *int64 {
	if limit == nil || *limit <= 0 {
		return nil
	}
	p := effective.Percent(max(charged, 0), *limit)
	return &p
}

// loadOf orders shares of limits for --sort-by percent: the percentage,
// beyond every one when a limit of 0 is passed, -1 without a limit.
func loadOf(charged int64, limit *int64) int64 {
	switch {
	case limit == nil:
		return -1
	case *limit <= 0 && charged > 0:
		return math.MaxInt64
	case *limit <= 0:
		return 0
	}
	return *percent(charged, limit)
}
