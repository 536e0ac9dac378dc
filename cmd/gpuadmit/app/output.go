package app

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
)

// The -o formats. jsonpath is written jsonpath=TEMPLATE.
const (
	formatTable    = "table"
	formatWide     = "wide"
	formatJSON     = "json"
	formatYAML     = "yaml"
	formatJSONPath = "jsonpath"
)

// Which -o formats a command takes: tableFormats where kubectl prints a
// table (usage, eval, effective; table by default), dataFormats where the
// output is a document only (version, policy schema).
var (
	tableFormats = []string{formatTable, formatWide, formatJSON, formatYAML, formatJSONPath}
	dataFormats  = []string{formatJSON, formatYAML, formatJSONPath}
)

// output is a parsed -o: a format and, for jsonpath, its template.
type output struct {
	format   string
	template *jsonpath.JSONPath
}

// outputFlag adds -o/--output to cmd: the formats it takes, dflt when
// -o is not given ("" for a command whose default is not one of them).
func outputFlag(cmd *cobra.Command, out *string, dflt string, formats []string) {
	usage := "output format: " + formatList(formats)
	if dflt == "" {
		usage += "; default: text"
	}
	cmd.Flags().StringVarP(out, "output", "o", dflt, usage)
	completions := slices.Clone(formats)
	if i := slices.Index(completions, formatJSONPath); i >= 0 {
		completions[i] = formatJSONPath + "="
	}
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(completions, cobra.ShellCompDirectiveNoFileComp))
}

// formatList is formats as the help and the errors write them.
func formatList(formats []string) string {
	names := make([]string, len(formats))
	for i, f := range formats {
		names[i] = f
		if f == formatJSONPath {
			names[i] = "jsonpath=TEMPLATE"
		}
	}
	return strings.Join(names, ", ")
}

// parseOutput reads -o: one of formats, or jsonpath=TEMPLATE with a
// template k8s.io/client-go/util/jsonpath parses (as kubectl's -o
// jsonpath; a key the document lacks prints nothing).
func parseOutput(s string, formats []string) (output, error) {
	if tmpl, ok := strings.CutPrefix(s, formatJSONPath+"="); ok && slices.Contains(formats, formatJSONPath) {
		if tmpl == "" {
			return output{}, usageErrorf("--output jsonpath= needs a template, as in -o jsonpath='{.allowed}'")
		}
		j := jsonpath.New("output")
		j.AllowMissingKeys(true)
		if err := j.Parse(tmpl); err != nil {
			return output{}, usageErrorf("--output jsonpath=%s: %v", tmpl, err)
		}
		return output{format: formatJSONPath, template: j}, nil
	}
	if s == formatJSONPath || !slices.Contains(formats, s) {
		return output{}, usageErrorf("--output %q is not a format this command prints: allowed formats are %s", s, formatList(formats))
	}
	return output{format: s}, nil
}

// table reports whether the output is a table (wide or not).
func (o output) table() bool { return o.format == formatTable || o.format == formatWide }

// wide reports whether the table has its extra columns.
func (o output) wide() bool { return o.format == formatWide }

// write prints doc: as a table (table, wide: printTable), or its JSON
// (writeJSON's, byte for byte as before -o had other formats), that JSON
// as YAML, or the jsonpath template over it.
func (o output) write(w io.Writer, doc any, printTable func(wide bool) error) error {
	if o.table() {
		return printTable(o.wide())
	}
	var buf bytes.Buffer
	if err := writeJSON(&buf, doc); err != nil {
		return err
	}
	return o.writeData(w, buf.Bytes())
}

// writeData prints a JSON document: as it is (json), as YAML, or the
// jsonpath template over it.
func (o output) writeData(w io.Writer, data []byte) error {
	switch o.format {
	case formatYAML:
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	case formatJSONPath:
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
