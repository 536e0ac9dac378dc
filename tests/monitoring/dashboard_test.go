package monitoring_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"testing"
)

const dashboardFile = "../../charts/gpuadmit/files/monitoring/grafana-dashboard.json"

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int         `json:"id"`
	Type       string      `json:"type"`
	Title      string      `json:"title"`
	Datasource *datasource `json:"datasource"`
	Targets    []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels      []panel `json:"panels"` // a collapsed row's
	FieldConfig struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": "..."}
	Datasource *datasource     `json:"datasource"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatalf("reading the dashboard: %v", err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// panels returns every panel, those inside collapsed rows included.
func (d dashboard) panels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			out = append(out, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// labelValues matches the selector of label_values(selector, label) and
// the expression of query_result(expr).
var labelValues = regexp.MustCompile(`^\s*(?:label_values\((.+),\s*\w+\s*\)|query_result\((.+)\))\s*$`)

func (v variable) promQL() (string, bool) {
	var q string
	if err := json.Unmarshal(v.Query, &q); err != nil {
		var obj struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &obj) != nil {
			return "", false
		}
		q = obj.Query
	}
	m := labelValues.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return m[1] + m[2], true
}

// dashboardQueries returns every panel target's and query variable's
// PromQL, Grafana's variables replaced (withoutVariables).
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	d := readDashboard(t)
	var qs []query
	for _, p := range d.panels() {
		for _, tg := range p.Targets {
			qs = append(qs, query{where: fmt.Sprintf("%s: panel %d %q, target %s", dashboardFile, p.ID, p.Title, tg.RefID),
				expr: withoutVariables(tg.Expr)})
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.promQL(); ok {
			qs = append(qs, query{where: fmt.Sprintf("%s: variable %s", dashboardFile, v.Name), expr: withoutVariables(q)})
		}
	}
	return qs
}

// TestDashboard checks that every query parses, that every panel reads the
// templated Prometheus data source (none is bound to one Grafana's), and
// that the variables the brief promises exist.
func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("%s: no uid or title", dashboardFile)
	}
	vars := map[string]variable{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if v := vars["datasource"]; v.Type != "datasource" || string(v.Query) != `"prometheus"` {
		t.Errorf("%s: no datasource variable of Prometheus data sources (type %q, query %s)", dashboardFile, v.Type, v.Query)
	}
	if _, ok := vars["namespace"].promQL(); !ok {
		t.Errorf("%s: no namespace variable read from Prometheus", dashboardFile)
	}
	templated := func(ds *datasource) bool { return ds != nil && ds.Type == "prometheus" && ds.UID == "${datasource}" }
	for _, v := range d.Templating.List {
		if v.Type == "query" && !templated(v.Datasource) {
			t.Errorf("%s: variable %s does not read ${datasource}", dashboardFile, v.Name)
		}
	}
	ids := map[int]string{}
	targets := 0
	for _, p := range d.panels() {
		if other, dup := ids[p.ID]; dup {
			t.Errorf("%s: panels %q and %q share the id %d", dashboardFile, other, p.Title, p.ID)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if !templated(p.Datasource) {
			t.Errorf("%s: panel %d %q does not read ${datasource}: %+v", dashboardFile, p.ID, p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %d %q has no query", dashboardFile, p.ID, p.Title)
		}
		for _, tg := range p.Targets {
			targets++
			if tg.Datasource != nil && !templated(tg.Datasource) {
				t.Errorf("%s: panel %d %q target %s does not read ${datasource}", dashboardFile, p.ID, p.Title, tg.RefID)
			}
		}
	}
	qs := dashboardQueries(t)
	if len(qs) < targets {
		t.Fatalf("%d queries for %d targets", len(qs), targets)
	}
	for _, q := range qs {
		if _, err := q.parse(); err != nil {
			t.Error(err)
		}
	}
}

// memoryQuery matches a query that selects the memory resources
// (gpuadmit_resource_info{dimension="memory"}), and inBytes one that
// converts their MiB to bytes.
var (
	memoryQuery = regexp.MustCompile(`gpuadmit_resource_info\{dimension="memory"\}`)
	inBytes     = regexp.MustCompile(`\* 1048576\s*$`)
)

// TestDashboardMemoryInBytes: a panel of memory shows bytes, as Grafana
// expects them: each of its queries selects the memory resources and
// multiplies their MiB by 1048576, and its unit is "bytes"; a panel in
// bytes has only such queries.
func TestDashboardMemoryInBytes(t *testing.T) {
	memoryPanels := 0
	for _, p := range readDashboard(t).panels() {
		memory, bytes := 0, p.FieldConfig.Defaults.Unit == "bytes"
		for _, tg := range p.Targets {
			if memoryQuery.MatchString(tg.Expr) {
				memory++
				if !inBytes.MatchString(tg.Expr) {
					t.Errorf("%s: panel %d %q target %s reads memory in MiB without * 1048576: %s", dashboardFile, p.ID, p.Title, tg.RefID, tg.Expr)
				}
			}
		}
		switch {
		case memory > 0 && !bytes:
			t.Errorf("%s: panel %d %q shows memory with unit %q, want bytes", dashboardFile, p.ID, p.Title, p.FieldConfig.Defaults.Unit)
		case bytes && memory != len(p.Targets):
			t.Errorf("%s: panel %d %q is in bytes but %d of its %d queries are not memory in bytes", dashboardFile, p.ID, p.Title,
				len(p.Targets)-memory, len(p.Targets))
		}
		if memory > 0 {
			memoryPanels++
		}
	}
	if memoryPanels == 0 {
		t.Errorf("%s: no panel shows GPU memory", dashboardFile)
	}
}
