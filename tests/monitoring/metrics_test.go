package monitoring_test

import (
	"flag"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

const metricsFile = "../../charts/gpuadmit/files/monitoring/metrics.txt"

var update = flag.Bool("update", false, "rewrite "+metricsFile+" from the rules and the dashboard")

// TestMetricNames lists every metric name the rules and the dashboard use
// (histogram series such as _bucket as written) and compares the sorted
// list with metrics.txt, one name a line. The metrics suite (tests/metrics)
// checks that a running server exposes each of gpuadmit's (and the API
// server each apiserver_ one), so a renamed metric cannot leave a rule or a
// panel reading nothing.
func TestMetricNames(t *testing.T) {
	names := map[string]bool{}
	for _, q := range append(ruleQueries(t), dashboardQueries(t)...) {
		e, err := q.parse()
		if err != nil {
			t.Fatal(err)
		}
		ns, err := metricNames(e)
		if err != nil {
			t.Fatalf("%s: %v", q.where, err)
		}
		for _, n := range ns {
			names[n] = true
		}
	}
	got := slices.Sorted(maps.Keys(names))
	text := strings.Join(got, "\n") + "\n"
	if *update {
		if err := os.WriteFile(metricsFile, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(metricsFile)
	if err != nil {
		t.Fatalf("reading %s (go test -update writes it): %v", metricsFile, err)
	}
	want := strings.Fields(string(b))
	for _, n := range got {
		if !slices.Contains(want, n) {
			t.Errorf("%s: the rules or the dashboard use %s, which is not listed", metricsFile, n)
		}
	}
	for _, n := range want {
		if !names[n] {
			t.Errorf("%s: lists %s, which neither the rules nor the dashboard use", metricsFile, n)
		}
	}
	if t.Failed() {
		t.Log("after checking the names, run `go test ./... -update` in tests/monitoring")
	} else if string(b) != text {
		t.Errorf("%s is not sorted one name a line: run `go test ./... -update` in tests/monitoring", metricsFile)
	}
}
