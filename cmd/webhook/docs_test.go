package main

import (
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestConfigurationDocumented: docs/configuration.md has a row for every
// flag of the webhook (its default in the row) and for every key of the
// configuration type, and its example file is exactly the defaults. A flag
// or a key added without its documentation fails here.
func TestConfigurationDocumented(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	rows := map[string]string{} // first cell -> second cell
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^|]*) \\|").FindAllStringSubmatch(doc, -1) {
		rows[m[1]] = m[2]
	}
	fs := flag.NewFlagSet("webhook", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	newFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		def, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("flag %s has no row in docs/configuration.md", name)
		case f.DefValue != "" && !strings.Contains(def, "`"+f.DefValue+"`"):
			t.Errorf("flag %s: the row's default %q does not name %q", name, def, f.DefValue)
		}
	})
	for _, key := range config.Keys() {
		if key == "apiVersion" || key == "kind" {
			continue
		}
		if _, ok := rows[key]; !ok {
			t.Errorf("configuration key %s has no row in docs/configuration.md", key)
		}
	}
	example := regexp.MustCompile("(?s)```yaml\n(apiVersion: config.gpuadmit.io.*?)```").FindStringSubmatch(doc)
	if example == nil {
		t.Fatal("docs/configuration.md has no example configuration")
	}
	cfg, ignored, err := config.Parse([]byte(example[1]))
	if err != nil || len(ignored) > 0 {
		t.Fatalf("the example does not parse: %v (ignored %q)", err, ignored)
	}
	if !equality.Semantic.DeepEqual(cfg, config.Default()) {
		t.Errorf("the example is not the defaults")
	}
}
