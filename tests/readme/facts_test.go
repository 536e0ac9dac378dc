package readme_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// fact is a default a doc names in its prose: every match of re in doc
// (its first group, read with unit) must equal the source of truth, a
// key of the chart's values.yaml ("values:") or of gpuadmit's defaulted
// configuration ("config:"), Chart.yaml ("chart:") or a variable of the
// Makefile ("make:", its `VAR ?= value`). A regexp that matches nothing fails: the
// sentence was reworded, and the fact must be found again.
type fact struct {
	doc, re, source string
	// unit turns the captured text into the source's form: "s", "m"
	// (a duration), "TiB" (in MiB), "word" (a number written out), "onoff"
	// (on: true), "minVersion" (1.34: Chart.yaml's ">=1.34.0-0").
	unit string
}

var facts = []fact{
	{"README.md", "`agent\\.enabled: (\\w+)`, the default", "values:agent.enabled", ""},
	{"README.md", "(\\w+) replicas, `failurePolicy", "values:replicas", "word"},
	{"README.md", "replicas, `failurePolicy: (\\w+)`", "values:webhook.failurePolicy", ""},
	{"README.md", "`failurePolicy: \\w+`, ([\\w-]+) certificates", "values:certificates.mode", ""},
	{"README.md", "Kubernetes \\*\\*(\\d+\\.\\d+) or later\\*\\*", "chart:kubeVersion", "minVersion"},
	{"docs/nodeagent.md", "by default \\(`agent\\.enabled: (\\w+)`\\)", "values:agent.enabled", ""},
	{"docs/nodeagent.md", "`agent\\.interval`\\s+\\(`(\\w+)`\\)", "values:agent.interval", ""},
	{"docs/nodeagent.md", "`agent\\.nodeSelector` picks \\(`nvidia\\.com/gpu\\.present: \"(\\w+)\"`", "values:agent.nodeSelector.nvidia\\.com/gpu\\.present", ""},
	{"docs/webhook.md", "main ones: `replicas` \\((\\d+)\\)", "values:replicas", ""},
	{"docs/webhook.md", "a Deployment of (\\w+) replicas", "values:replicas", "word"},
	{"docs/webhook.md", "`failurePolicy: (\\w+)`, the default", "values:webhook.failurePolicy", ""},
	{"docs/webhook.md", "`failurePolicy: (\\w+)`, `timeoutSeconds", "values:webhook.failurePolicy", ""},
	{"docs/webhook.md", "`timeoutSeconds: (\\d+)`, `sideEffects", "values:webhook.timeoutSeconds", ""},
	{"docs/webhook.md", "`crds\\.keep: (\\w+)` \\(the default\\)", "values:crds.keep", ""},
	{"docs/webhook.md", "`konnectivity: (\\w+)` \\(the default\\)", "values:networkPolicy.apiServer.konnectivity", ""},
	{"docs/webhook.md", "`webhook\\.tls\\.minVersion` \\(`\"([\\d.]+)\"`\\)", "values:webhook.tls.minVersion", ""},
	{"docs/webhook.md", "`--shutdown-delay` \\((\\d+) s\\)", "values:shutdownDelay", "s"},
	{"docs/webhook.md", "`metrics\\.secure` \\((on|off):", "values:metrics.secure", "onoff"},
	{"docs/webhook.md", "`webhook\\.clientAuth` \\((on|off):", "values:webhook.clientAuth.enabled", "onoff"},
	{"docs/webhook.md", "`networkPolicy` \\((on|off):", "values:networkPolicy.enabled", "onoff"},
	{"docs/webhook.md", "`guards\\.hamiPodAnnotations` \\((on|off):", "values:guards.hamiPodAnnotations.enabled", "onoff"},
	{"docs/webhook.md", "`guards\\.nodeDeviceAnnotations` \\((on|off):", "values:guards.nodeDeviceAnnotations.enabled", "onoff"},
	{"docs/webhook.md", "`certificates\\.mode`\\s+\\(`([\\w-]+)` or", "values:certificates.mode", ""},
	{"docs/webhook.md", "Metrics \\(on `:(\\d+)/metrics`\\)", "values:ports.metrics", ""},
	{"docs/webhook.md", "`admission\\.reservations\\.maxPerNamespace` \\((\\d+)\\)", "config:admission.reservations.maxPerNamespace", ""},
	{"docs/webhook.md", "at most (\\d+) reads a second", "config:admission.reservations.readsPerSecond", ""},
	{"docs/webhook.md", "backing off\\s+to (\\d+) s", "config:admission.reservations.recheckMax", "s"},
	{"docs/webhook.md", "after `StaleAfter` \\((\\d+) min by default\\)", "config:admission.watches.staleAfter", "m"},
	{"docs/monitoring.md", "\\(`:(\\d+)/metrics`;", "values:ports.metrics", ""},
	{"docs/configuration.md", "\\| `--port` \\| `(\\d+)`", "values:ports.webhook", ""},
	{"docs/configuration.md", "\\| `--metrics-bind-address` \\| `:(\\d+)`", "values:ports.metrics", ""},
	{"docs/configuration.md", "\\| `--health-probe-bind-address` \\| `:(\\d+)`", "values:ports.probes", ""},
	{"docs/configuration.md", "\\| `--shutdown-delay` \\| `(\\w+)`", "values:shutdownDelay", ""},
	{"docs/demand.md", "\n  memoryFactor: (\\d+) ", "config:devices.nvidia.memoryFactor", ""},
	{"docs/demand.md", "\n  defaultMemory: (\\d+) ", "config:devices.nvidia.defaultMemory", ""},
	{"docs/demand.md", "\n  defaultCores: (\\d+) ", "config:devices.nvidia.defaultCores", ""},
	{"docs/demand.md", "\n  defaultGPUNum: (\\d+) ", "config:devices.nvidia.defaultGPUNum", ""},
	{"docs/demand.md", "\n  exclusiveCores: (\\w+) ", "config:devices.nvidia.exclusiveCores", ""},
	{"docs/policy-input.md", "share of a limit \\(default (\\d+)\\)", "config:admission.nearLimitPercent", ""},
	{"docs/policy-input.md", "`(\\w+)` \\(default\\) or `\\w+`: what to do with device requests", "config:admission.unsatisfiable", ""},
	{"docs/dra.md", "`dra\\.networkPoolDrivers` \\(default `([^`]+)`", "config:dra.networkPoolDrivers", ""},
	{"docs/dra.md", "\\(default (\\d+) TiB", "config:capacity.maxDeviceMemoryMiB.default", "TiB"},
	{"docs/development.md", "`FUZZTIME`, default (\\w+)\\)", "make:FUZZTIME", ""},
}

// TestDocFacts: the defaults the docs name in prose are the chart's and
// the configuration's.
func TestDocFacts(t *testing.T) {
	values := chartValues(t)
	defaults := configJSON(t, config.Default())
	for _, f := range facts {
		raw, err := os.ReadFile("../../" + f.doc)
		if err != nil {
			t.Fatal(err)
		}
		src, path, _ := strings.Cut(f.source, ":")
		tree := map[string]any{"values": values, "config": defaults, "chart": chartFile(t), "make": makeVars(t)}[src]
		truth, ok := lookup(tree, path)
		if !ok {
			t.Errorf("%s: %s names no value", f.doc, f.source)
			continue
		}
		ms := regexp.MustCompile(f.re).FindAllStringSubmatch(string(raw), -1)
		if len(ms) == 0 {
			t.Errorf("%s: nothing matches %q: the sentence that names %s (%v) is gone or reworded; find it again", f.doc, f.re, f.source, truth)
		}
		for _, m := range ms {
			if got := withUnit(m[1], f.unit); canonical(got) != canonical(truth) {
				t.Errorf("%s says %q (%v) but %s is %v", f.doc, m[0], got, f.source, truth)
			}
		}
	}
}

var keyRow = regexp.MustCompile("(?m)^\\| `([a-z][A-Za-z]*\\.[A-Za-z.]*)` \\| `([^`|]+)` \\|")

// TestConfigurationDefaults: every row of docs/configuration.md's key
// tables whose default is one value in backticks names the default that
// SetDefaults gives (every HAMi section present, so that theirs are set
// too); a list's keys ("[]") are left out.
func TestConfigurationDefaults(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := config.Parse([]byte(`apiVersion: config.gpuadmit.io/v1alpha1
kind: Configuration
devices: {nvidia: {}, cambricon: {}, hygon: {}, metax: {}, enflame: {}, mthreads: {}, kunlun: {}, awsneuron: {}, amd: {}, vastai: {}, biren: {}, gpushare: {}}
`))
	if err != nil {
		t.Fatal(err)
	}
	defaults := configJSON(t, all)
	checked := 0
	for _, m := range keyRow.FindAllStringSubmatch(string(raw), -1) {
		key, doc := m[1], m[2]
		if strings.HasPrefix(key, "-") {
			continue
		}
		truth, ok := lookup(defaults, key)
		if !ok {
			t.Errorf("docs/configuration.md: key %s (default %s) is not in the defaulted configuration", key, doc)
			continue
		}
		checked++
		if canonical(withUnit(doc, "")) != canonical(truth) {
			t.Errorf("docs/configuration.md: %s's default is %s in the table but %v in SetDefaults", key, doc, truth)
		}
	}
	if checked < 50 {
		t.Errorf("docs/configuration.md: %d key rows checked, want at least 50 (does the table still read | `key` | `default` | meaning |?)", checked)
	}
}

// TestValuesConfigIsTheDefaults: the chart's config values (what it renders
// into gpuadmit-config, and what its comments call the defaults) are
// SetDefaults' values, leaf by leaf.
func TestValuesConfigIsTheDefaults(t *testing.T) {
	values := chartValues(t)
	defaults := configJSON(t, config.Default())
	n := 0
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, sub := range m {
				walk(prefix+"."+strings.ReplaceAll(k, ".", `\.`), sub)
			}
			return
		}
		n++
		truth, ok := lookup(defaults, strings.TrimPrefix(prefix, "."))
		if !ok || canonical(v) != canonical(truth) {
			t.Errorf("values.yaml config%s is %v, but its default is %v (set: %v)", prefix, v, truth, ok)
		}
	}
	walk("", values["config"])
	if n < 20 {
		t.Errorf("values.yaml config has %d leaves, want at least 20", n)
	}
}

var (
	valuePath = regexp.MustCompile("`([a-z][A-Za-z0-9]*(?:\\.[a-z][A-Za-z0-9]*)+)`")
	chartsOwn = regexp.MustCompile("chart's `([a-z][A-Za-z0-9]*(?:\\.[a-z][A-Za-z0-9]*)+)(?::\\s[^`]*)?`")
	fileName  = regexp.MustCompile(`\.(txt|yaml|yml|json|md|go|rego|io|com|sh)$`)
)

// configSections are the configuration's own top-level keys: a path that
// starts with one names a configuration key (docs/configuration.md), not
// a chart value.
var configSections = map[string]bool{"devices": true, "admission": true, "policy": true, "clientConnection": true, "dra": true, "audit": true, "capacity": true}

// TestChartValuesNamed: every value of the chart a doc names in backticks
// (a dotted path starting at a top-level key of values.yaml, or any path
// after "the chart's") is a key of values.yaml: a value renamed or never
// there sends operators to a value helm would refuse.
func TestChartValuesNamed(t *testing.T) {
	values := chartValues(t)
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range append(docs, "../../README.md") {
		if otherAreas[filepath.Base(doc)] {
			continue
		}
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, m := range valuePath.FindAllStringSubmatch(string(raw), -1) {
			first, _, _ := strings.Cut(m[1], ".")
			if _, ok := values[first]; ok && !configSections[first] && !fileName.MatchString(m[1]) {
				paths = append(paths, m[1])
			}
		}
		for _, m := range chartsOwn.FindAllStringSubmatch(string(raw), -1) {
			paths = append(paths, m[1])
		}
		for _, p := range paths {
			checked++
			if _, ok := lookup(values, p); !ok {
				t.Errorf("%s names the chart value %s, which values.yaml does not have", strings.TrimPrefix(doc, "../../"), p)
			}
		}
	}
	if checked < 30 {
		t.Errorf("%d chart values named in the docs, want at least 30", checked)
	}
}

// otherAreas are the docs this test leaves to their own tests.
var otherAreas = map[string]bool{"devices.md": true, "hami.md": true, "cli.md": true, "tenants.md": true, "upgrading.md": true}

func chartValues(t *testing.T) map[string]any {
	return readYAML(t, "../../charts/gpuadmit/values.yaml")
}

func chartFile(t *testing.T) map[string]any { return readYAML(t, "../../charts/gpuadmit/Chart.yaml") }

// makeVars are the Makefile's defaults (VAR ?= value).
func makeVars(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]any{}
	for _, m := range regexp.MustCompile(`(?m)^(?:export )?(\w+) \?= (.*)$`).FindAllStringSubmatch(string(raw), -1) {
		vars[m[1]] = m[2]
	}
	return vars
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func configJSON(t *testing.T, c *config.Configuration) map[string]any {
	t.Helper()
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(js, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// lookup follows a dotted path ("\." is a dot inside a key).
func lookup(v any, path string) (any, bool) {
	for _, key := range splitPath(path) {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[key]; !ok {
			return nil, false
		}
	}
	return v, true
}

func splitPath(path string) []string {
	parts := strings.Split(strings.ReplaceAll(path, `\.`, "\x00"), ".")
	for i := range parts {
		parts[i] = strings.ReplaceAll(parts[i], "\x00", ".")
	}
	return parts
}

var words = map[string]string{"one": "1", "two": "2", "three": "3", "four": "4", "five": "5"}

// withUnit reads captured text as the source writes it: YAML, after the
// unit's conversion.
func withUnit(s, unit string) any {
	switch unit {
	case "s", "m":
		s += unit
	case "word":
		if w, ok := words[strings.ToLower(s)]; ok {
			s = w
		}
	case "onoff":
		s = strconv.FormatBool(s == "on")
	case "minVersion":
		s = strconv.Quote(">=" + s + ".0-0")
	case "TiB":
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			s = strconv.FormatInt(n<<20, 10)
		}
	}
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

// canonical compares values across their spellings: JSON, strings case
// folded, durations normalized ("3m" is "3m0s").
func canonical(v any) string {
	if s, ok := v.(string); ok {
		if d, err := time.ParseDuration(s); err == nil {
			return d.String()
		}
		return strings.ToLower(s)
	}
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.ToLower(string(js))
}
