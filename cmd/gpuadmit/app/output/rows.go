package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/util/jsonpath"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// noHeadersFlag is kubectl's --no-headers.
const noHeadersFlag = "no-headers"

// Row is one row of a command's output, as -o name and -o custom-columns
// see it: its kind and name (KIND/NAME) and the object the columns' paths
// are read from (its JSON, with a "name" when it has none).
type Row struct {
	Kind, Name string
	Object     any
}

// Lister is a command's document that has rows (usage's and top's
// namespaces, audit's limits passed, eval's and effective's objects).
type Lister interface{ Rows() []Row }

// column is one custom column: its header and the JSONPath of its cells.
type column struct {
	header string
	path   *jsonpath.JSONPath
}

// ParseCmd is Parse with cmd's --no-headers, which only a table (or
// custom-columns) takes.
func ParseCmd(cmd *cobra.Command, s string, formats []string) (Output, error) {
	o, err := Parse(s, formats)
	if err != nil {
		return o, err
	}
	if f := cmd.Flags().Lookup(noHeadersFlag); f != nil && f.Changed {
		if !o.Table() && o.Format != FormatColumns {
			return Output{}, cmdline.UsageErrorf("--no-headers is for the tables (-o table, wide, custom-columns), not -o %s", o.Format)
		}
		o.noHeaders = true
	}
	return o, nil
}

// Listed reports whether the output is rows of the document's (-o name,
// custom-columns): a command prints its document as a Lister then.
func (o Output) Listed() bool { return o.Format == FormatName || o.Format == FormatColumns }

// parseColumns reads custom-columns' HEADER:PATH,...; a PATH is a
// JSONPath with or without its braces (.used.gpumem, {.used.gpumem}).
func parseColumns(spec string) ([]column, error) {
	if spec == "" {
		return nil, cmdline.UsageErrorf("--output custom-columns= needs columns, as in -o custom-columns=NAME:.name,USED:.used.gpumem")
	}
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		header, path, ok := strings.Cut(part, ":")
		if !ok || header == "" || path == "" {
			return nil, cmdline.UsageErrorf("--output custom-columns: %q is not HEADER:PATH", part)
		}
		if !strings.HasPrefix(path, "{") {
			path = "{" + path + "}"
		}
		j := jsonpath.New(header)
		j.AllowMissingKeys(true)
		if err := j.Parse(path); err != nil {
			return nil, cmdline.UsageErrorf("--output custom-columns: %s: %v", part, err)
		}
		cols = append(cols, column{header: header, path: j})
	}
	return cols, nil
}

// writeRows prints doc's rows: KIND/NAME each (name, each once), or a
// table of the custom columns.
func (o Output) writeRows(w io.Writer, doc any) error {
	l, ok := doc.(Lister)
	if !ok {
		return fmt.Errorf("-o %s: this command's output has no rows", o.Format)
	}
	rows := l.Rows()
	if o.Format == FormatName {
		var seen []string
		for _, r := range rows {
			if n := strings.ToLower(r.Kind) + "/" + r.Name; !slices.Contains(seen, n) {
				seen = append(seen, n)
				if _, err := fmt.Fprintln(w, n); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if o.noHeaders {
		w = headless{w}
	}
	t := NewTable(w)
	headers := make([]string, len(o.columns))
	for i, c := range o.columns {
		headers[i] = c.header
	}
	fmt.Fprintln(t, strings.Join(headers, "\t"))
	for _, r := range rows {
		cells, err := o.cells(r)
		if err != nil {
			return err
		}
		fmt.Fprintln(t, strings.Join(cells, "\t"))
	}
	return t.Flush()
}

// cells are the custom columns of r: "<none>" where its path finds
// nothing, as kubectl's.
func (o Output) cells(r Row) ([]string, error) {
	data, err := json.Marshal(r.Object)
	if err != nil {
		return nil, err
	}
	var obj any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	if m, ok := obj.(map[string]any); ok {
		if _, named := m["name"]; !named {
			m["name"] = r.Name
		}
	}
	cells := make([]string, len(o.columns))
	for i, c := range o.columns {
		var buf bytes.Buffer
		if err := c.path.Execute(&buf, obj); err != nil {
			return nil, fmt.Errorf("--output custom-columns: %s: %w", c.header, err)
		}
		cells[i] = buf.String()
		if cells[i] == "" {
			cells[i] = "<none>"
		}
	}
	return cells, nil
}
