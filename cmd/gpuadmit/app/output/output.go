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
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// The -o formats. jsonpath is written jsonpath=TEMPLATE.
const (
	FormatTable    = "table"
	formatWide     = "wide"
	FormatJSON     = "json"
	FormatYAML     = "yaml"
	FormatJSONPath = "jsonpath"
	// FormatName prints KIND/NAME of each row; FormatColumns, written
	// custom-columns=HEADER:PATH,..., a column for each JSONPath of a row.
	FormatName    = "name"
	FormatColumns = "custom-columns"
)

// Which -o formats a command takes: tableFormats where kubectl prints a
// table (usage, eval, effective; table by default), dataFormats where the
// output is a document only (version, policy schema).
var (
	TableFormats = []string{FormatTable, formatWide, FormatJSON, FormatYAML, FormatJSONPath, FormatName, FormatColumns}
	DataFormats  = []string{FormatJSON, FormatYAML, FormatJSONPath}
)

// Output is a parsed -o: a format and, for jsonpath, its template.
type Output struct {
	Format   string
	template *jsonpath.JSONPath
	// columns are custom-columns'; noHeaders is --no-headers.
	columns   []column
	noHeaders bool
}

// Flag adds -o/--output to cmd: the formats it takes, dflt when
// -o is not given ("" for a command whose default is not one of them).
func Flag(cmd *cobra.Command, out *string, dflt string, formats []string) {
	usage := "output format: " + formatList(formats)
	if dflt == "" {
		usage += "; default: text"
	}
	cmd.Flags().StringVarP(out, "output", "o", dflt, usage)
	if slices.Contains(formats, FormatTable) {
		cmd.Flags().Bool(noHeadersFlag, false, "print the tables (and custom-columns) without their header, as kubectl")
	}
	completions := slices.Clone(formats)
	for i, f := range completions {
		if f == FormatJSONPath || f == FormatColumns {
			completions[i] = f + "="
		}
	}
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(completions, cobra.ShellCompDirectiveNoFileComp))
}

// formatList is formats as the help and the errors write them.
func formatList(formats []string) string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f
		switch f {
		case FormatJSONPath:
			names[i] = "jsonpath=TEMPLATE"
		case FormatColumns:
			names[i] = "custom-columns=HEADER:PATH,..."
		}
	}
	return strings.Join(names, ", ")
}

// Parse reads -o: one of formats, or jsonpath=TEMPLATE with a
// template k8s.io/client-go/util/jsonpath parses (as kubectl's -o
// jsonpath; a key the document lacks prints nothing).
func Parse(s string, formats []string) (Output, error) {
	if tmpl, ok := strings.CutPrefix(s, FormatJSONPath+"="); ok && slices.Contains(formats, FormatJSONPath) {
		if tmpl == "" {
			return Output{}, cmdline.UsageErrorf("--output jsonpath= needs a template, as in -o jsonpath='{.allowed}'")
		}
		j := jsonpath.New("output")
		j.AllowMissingKeys(true)
		if err := j.Parse(tmpl); err != nil {
			return Output{}, cmdline.UsageErrorf("--output jsonpath=%s: %v", tmpl, err)
		}
		return Output{Format: FormatJSONPath, template: j}, nil
	}
	if spec, ok := strings.CutPrefix(s, FormatColumns+"="); ok && slices.Contains(formats, FormatColumns) {
		cols, err := parseColumns(spec)
		if err != nil {
			return Output{}, err
		}
		return Output{Format: FormatColumns, columns: cols}, nil
	}
	if s == FormatJSONPath || s == FormatColumns || !slices.Contains(formats, s) {
		return Output{}, cmdline.UsageErrorf("--output %q is not a format this command prints: allowed formats are %s", s, formatList(formats))
	}
	return Output{Format: s}, nil
}

// Table reports whether the output is a table (wide or not).
func (o Output) Table() bool { return o.Format == FormatTable || o.Format == formatWide }

// wide reports whether the table has its extra columns.
func (o Output) wide() bool { return o.Format == formatWide }

// Write prints doc: as a table (table, wide: printTable), or its JSON
// (writeJSON's, byte for byte as before -o had other formats), that JSON
// as YAML, or the jsonpath template over it.
func (o Output) Write(w io.Writer, doc any, printTable func(w io.Writer, wide bool) error) error {
	if o.Table() {
		if o.noHeaders {
			w = headless{w} // the tables NewTable makes on it leave their headers out
		}
		return printTable(w, o.wide())
	}
	if o.Listed() {
		return o.writeRows(w, doc)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, doc); err != nil {
		return err
	}
	return o.WriteData(w, buf.Bytes())
}

// WriteData prints a JSON document: as it is (json), as YAML, or the
// jsonpath template over it.
func (o Output) WriteData(w io.Writer, data []byte) error {
	switch o.Format {
	case FormatYAML:
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	case FormatJSONPath:
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			return err
		}
		if err := o.template.Execute(w, v); err != nil {
			return fmt.Errorf("--output jsonpath: %w", err)
		}
		return nil
	}
	_, err := w.Write(data)
	return err
}

// WriteJSON writes v as indented JSON, HTML characters unescaped.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// TextOr is the -o of a command that prints text unless given a format.
func TextOr(s string, formats []string) (Output, error) {
	if s == "" {
		return Output{}, nil
	}
	return Parse(s, formats)
}
