package output

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Table is a writer of kubectl-style columns: its first line is the
// header, left out under --no-headers (its widths too).
type Table struct {
	tw *tabwriter.Writer
	// skipping drops what is written up to the first newline.
	skipping bool
}

// NewTable is a table on w (kubectl's tabwriter settings); without its
// header when w is what Write hands a table under --no-headers.
func NewTable(w io.Writer) *Table {
	h, headless := w.(headless)
	if headless {
		w = h.w
	}
	return &Table{tw: tabwriter.NewWriter(w, 6, 4, 3, ' ', 0), skipping: headless}
}

// Write writes p, less the header under --no-headers.
func (t *Table) Write(p []byte) (int, error) {
	n := len(p)
	if t.skipping {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return n, nil
		}
		t.skipping, p = false, p[i+1:]
	}
	if _, err := t.tw.Write(p); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes the rows, aligned.
func (t *Table) Flush() error { return t.tw.Flush() }

// headless is the writer a table is printed on under --no-headers: each
// table NewTable makes on it leaves its header out.
type headless struct{ w io.Writer }

func (h headless) Write(p []byte) (int, error) { return h.w.Write(p) }

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
