package view

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
)

// PrintBudgets writes a row per limited resource of each budget: used,
// limit and what is left in resource-hours, the percent, the burn rate of
// the last hour, when the window ends and when the rate would spend it,
// and the state; after the table, the problems of each budget.
func PrintBudgets(w io.Writer, bs []Budget) error {
	if len(bs) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	t := output.NewTable(w)
	fmt.Fprintln(t, "BUDGET\tWINDOW\tRESOURCE\tUSED(h)\tHARD(h)\tLEFT(h)\t%\tRATE(h/h)\tENDS\tEXHAUSTED\tSTATE")
	for _, b := range bs {
		for _, r := range b.Resources {
			hard := r.Hard
			if r.WhatIf {
				hard += "(what-if)"
			}
			fmt.Fprintln(t, strings.Join([]string{b.Key(), b.Window, r.Resource, r.Used, hard, r.Left,
				strconv.FormatInt(r.Percent, 10), r.BurnRate, timeCell(b.WindowEnd), timeCell(r.ProjectedExhaustion),
				strings.ToUpper(r.State)}, "\t"))
		}
		if len(b.Resources) == 0 {
			fmt.Fprintln(t, strings.Join([]string{b.Key(), b.Window, "-", "-", "-", "-", "-", "-", timeCell(b.WindowEnd), "-",
				strings.ToUpper(b.State)}, "\t"))
		}
	}
	if err := t.Flush(); err != nil {
		return err
	}
	var notes []string
	for _, b := range bs {
		for _, p := range b.Problems {
			notes = append(notes, b.Key()+": "+p)
		}
	}
	return output.PrintNotes(w, notes)
}

func timeCell(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
