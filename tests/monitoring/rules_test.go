package monitoring_test

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"sigs.k8s.io/yaml"
)

const rulesFile = "../../charts/gpuadmit/files/monitoring/prometheus-rules.yaml"

// ruleFile is a Prometheus rules file; For is a pointer to tell a missing
// duration from "0s".
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         *string           `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// groupedRule is a rule with where it is written.
type groupedRule struct {
	rule
	where string
}

// readRules reads the rules file, validates it as Prometheus loads it
// (rulefmt: known fields only, expressions, annotation templates), and
// returns its rules.
func readRules(t *testing.T) []groupedRule {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatalf("reading the rules: %v", err)
	}
	if _, errs := rulefmt.Parse(b, false, model.UTF8Validation, promql, slog.New(slog.DiscardHandler)); len(errs) > 0 {
		for _, err := range errs {
			t.Errorf("%s: Prometheus would not load it: %v", rulesFile, err)
		}
		t.FailNow()
	}
	var f ruleFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var out []groupedRule
	for _, g := range f.Groups {
		for i, r := range g.Rules {
			name := cmpOr(r.Alert, r.Record, fmt.Sprintf("rule %d", i+1))
			out = append(out, groupedRule{rule: r, where: fmt.Sprintf("%s: group %s, %s", rulesFile, g.Name, name)})
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no rules", rulesFile)
	}
	return out
}

func cmpOr(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func ruleQueries(t *testing.T) []query {
	t.Helper()
	var qs []query
	for _, r := range readRules(t) {
		qs = append(qs, query{where: r.where, expr: r.Expr})
	}
	return qs
}

var labelRef = regexp.MustCompile(`\$labels\.(\w+)`)

// TestAlertRules checks every rule's expression and every alert's
// duration, severity and annotations: they may use only the labels the
// expression keeps, and must name each of them (the namespace, the
// resource), so that a notification says where to look.
func TestAlertRules(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range readRules(t) {
		t.Run(cmpOr(r.Alert, r.Record), func(t *testing.T) {
			e, err := query{where: r.where, expr: r.Expr}.parse()
			if err != nil {
				t.Fatal(err)
			}
			if r.Record != "" {
				return
			}
			if seen[r.Alert] {
				t.Errorf("%s: alert name used twice", r.where)
			}
			seen[r.Alert] = true
			if r.For == nil {
				t.Errorf("%s: no for: an alert must hold for a while before it fires", r.where)
			} else if _, err := model.ParseDuration(*r.For); err != nil {
				t.Errorf("%s: for %q: %v", r.where, *r.For, err)
			}
			if s := r.Labels["severity"]; !slices.Contains([]string{"critical", "warning", "info"}, s) {
				t.Errorf("%s: labels.severity %q, want critical, warning or info", r.where, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no annotations.%s", r.where, a)
				}
			}
			kept, known := keptLabels(e)
			if !known {
				t.Errorf("%s: the labels of the result are not known from the expression (aggregate with by(...))", r.where)
				return
			}
			named := map[string]bool{}
			for _, a := range []string{r.Annotations["summary"], r.Annotations["description"]} {
				for _, m := range labelRef.FindAllStringSubmatch(a, -1) {
					named[m[1]] = true
				}
			}
			for _, l := range slices.Sorted(maps.Keys(named)) {
				if !kept[l] {
					t.Errorf("%s: the annotations use $labels.%s, but the expression keeps only %v", r.where, l, slices.Sorted(maps.Keys(kept)))
				}
			}
			for _, l := range slices.Sorted(maps.Keys(kept)) {
				if !named[l] {
					t.Errorf("%s: the expression keeps the label %s, but neither summary nor description names it", r.where, l)
				}
			}
		})
	}
}

const docFile = "../../docs/monitoring.md"

// TestAlertsDocumented: docs/monitoring.md's table of alerts has a row for
// each alert, with its duration, its severity and what a responder does,
// and no row for an alert the rules file does not have.
func TestAlertsDocumented(t *testing.T) {
	b, err := os.ReadFile(docFile)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{} // alert: its cells
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if name, ok := strings.CutPrefix(cells[0], "`GPUAdmit"); ok && len(cells) == 5 {
			rows["GPUAdmit"+strings.TrimSuffix(name, "`")] = cells
		}
	}
	alerts := map[string]bool{}
	for _, r := range readRules(t) {
		if r.Alert == "" {
			continue
		}
		alerts[r.Alert] = true
		cells, ok := rows[r.Alert]
		switch {
		case !ok:
			t.Errorf("%s: no row in %s's alert table", r.where, docFile)
		case r.For != nil && cells[2] != *r.For:
			t.Errorf("%s: %s says for %s, the rule %s", r.where, docFile, cells[2], *r.For)
		case cells[3] != r.Labels["severity"]:
			t.Errorf("%s: %s says severity %s, the rule %s", r.where, docFile, cells[3], r.Labels["severity"])
		case strings.TrimSpace(cells[4]) == "":
			t.Errorf("%s: %s does not say what to do", r.where, docFile)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		if !alerts[name] {
			t.Errorf("%s documents %s, which the rules file does not have", docFile, name)
		}
	}
}
