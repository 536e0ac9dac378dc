package why

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
)

// printReport writes `why -o table`: the pods, one pod's demand, the last
// denial, the limits the missing pods pass and the gang.
func printReport(w io.Writer, r report) error {
	t := output.NewTable(w)
	fmt.Fprintln(t, "WORKLOAD\tDESIRED\tEXISTING\tRUNNING\tMISSING\tDEMAND/POD")
	fmt.Fprintf(t, "%s/%s\t%d\t%d\t%d\t%d\t%s\n", r.Kind, r.Name, r.Desired, r.Existing, r.Running, r.Missing, demandCell(r))
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if d := r.LastDenial; d != nil {
		fmt.Fprintf(w, "Last denial: %s, %s on %s (%d recorded): %s\n", d.Time.UTC().Format(time.RFC3339), d.Reason, d.On, d.Count, d.Message)
	} else {
		fmt.Fprintln(w, "Last denial: none recorded (gpuadmit's Events of the last hour)")
	}
	switch {
	case r.Missing == 0:
		fmt.Fprintln(w, "Short: nothing, every pod it wants exists")
	case len(r.Short) == 0:
		fmt.Fprintf(w, "Short: %d pod(s); they fit under every GPU limit today (their wait is not the quota's)\n", r.Missing)
	default:
		fmt.Fprintf(w, "Short: %d pod(s); to admit them, free or raise:\n", r.Missing)
		t = output.NewTable(w)
		fmt.Fprintln(t, "RESOURCE\tNEEDED\tHEADROOM\tSHORT\tQUOTA\tLIMIT\tUSED\tRESERVED")
		for _, s := range r.Short {
			fmt.Fprintf(t, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\n", s.Resource, s.Needed, s.Headroom, s.Short, s.Quota, s.Limit, s.Used, s.Reserved)
		}
		if err := t.Flush(); err != nil {
			return err
		}
	}
	switch g := r.Gang; {
	case g == nil:
		fmt.Fprintln(w, "Gang: no gang")
	case g.Waiting:
		fmt.Fprintf(w, "Gang: %s %s waiting: %d of %d admitted, room held for %d more since %s\n", g.Kind, g.Name, g.Admitted, g.MinCount,
			g.Slots, g.HeldSince.UTC().Format(time.RFC3339))
	case g.Ended != "":
		fmt.Fprintf(w, "Gang: %s %s not waiting: its hold ended (%s)\n", g.Kind, g.Name, g.Ended)
	default:
		fmt.Fprintf(w, "Gang: %s %s not waiting: no room held for it\n", g.Kind, g.Name)
	}
	return output.PrintNotes(w, r.Notes)
}

// demandCell is one pod's demand: the first family's, then the others'.
func demandCell(r report) string {
	cell := r.Demand.String()
	for _, f := range slices.Sorted(maps.Keys(r.Families)) {
		cell += "; " + f + " " + r.Families[f].String()
	}
	return cell
}
