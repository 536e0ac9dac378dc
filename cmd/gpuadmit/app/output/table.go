package output

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// NewTable is a writer of kubectl-style columns (kubectl's tabwriter
// settings).
func NewTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// OfLimit is "used/limit", the limit "-" when there is none.
func OfLimit(used int64, limit *int64) string {
	if limit == nil {
		return strconv.FormatInt(used, 10) + "/-"
	}
	return fmt.Sprintf("%d/%d", used, *limit)
}

// OrDash is s, or "-" when s is empty.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// DemandCells are the GPU, GPUMEM(MiB) and GPUCORES cells of a demand.
func DemandCells(v effective.Vector) string {
	return fmt.Sprintf("%d\t%d\t%d", v.GPU, v.MemMiB, v.Cores)
}

// PrintNotes writes the lines under a table, after an empty line.
func PrintNotes(w io.Writer, notes []string) error {
	if len(notes) == 0 {
		return nil
	}
	_, err := fmt.Fprintf(w, "\n%s\n", strings.Join(notes, "\n"))
	return err
}
