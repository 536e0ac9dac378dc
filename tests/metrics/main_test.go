// Without KUBEBUILDER_ASSETS the suite skips, unless GPUADMIT_REQUIRE_ENVTEST=1
// (make integration), where it fails instead.
package metrics_test

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// undoRegisterer registers on controller-runtime's registry (the one its
// metrics endpoint serves, as in cmd/webhook) and unregisters everything at
// the end of the test, so that the process-wide registry stays reusable
// (go test -count=2).
type undoRegisterer struct {
	prometheus.Registerer
	done []prometheus.Collector
}

func (u *undoRegisterer) Register(c prometheus.Collector) error {
	if err := u.Registerer.Register(c); err != nil {
		return err
	}
	u.done = append(u.done, c)
	return nil
}

func (u *undoRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := u.Register(c); err != nil {
			panic(err)
		}
	}
}

func (u *undoRegisterer) undo() {
	for _, c := range u.done {
		u.Unregister(c)
	}
}

// family is one scraped metric family: its type and its samples (gauge,
// counter or untyped values; histograms' sample counts), keyed by labels.
type family struct {
	typ    string
	series map[string]float64
}

// scrape reads url's exposition with token, as Prometheus does.
func scrape(t *testing.T, url, token string) map[string]family {
	t.Helper()
	status, body, err := local.Scrape(t.Context(), url, token)
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	if status != http.StatusOK {
		t.Fatalf("scraping %s: %d: %s", url, status, body)
	}
	return parseExposition(t, url, body)
}

// parseExposition reads a text exposition (from url) into families.
func parseExposition(t *testing.T, url, body string) map[string]family {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	out := make(map[string]family, len(mfs))
	for name, mf := range mfs {
		f := family{typ: mf.GetType().String(), series: map[string]float64{}}
		for _, m := range mf.GetMetric() {
			parts := make([]string, 0, len(m.GetLabel()))
			for _, lp := range m.GetLabel() {
				parts = append(parts, lp.GetName()+"="+lp.GetValue())
			}
			slices.Sort(parts)
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue() +
				float64(m.GetHistogram().GetSampleCount())
			f.series[strings.Join(parts, ",")] = v
		}
		out[name] = f
	}
	return out
}

// eventually scrapes url until family name's series equal ledger() (which
// must hold fixed), for 10 s: the cluster of TestMetrics has no other GPU
// namespace or node.
func eventually(t *testing.T, url, token, name string, ledger func() map[string]float64, fixed ...map[string]float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		want := ledger()
		diff := seriesDiff(scrape(t, url, token)[name].series, want)
		for _, f := range fixed {
			for k, v := range f {
				if want[k] != v {
					diff = append(diff, fmt.Sprintf("the ledger has {%s} = %v, want %v", k, want[k], v))
				}
			}
		}
		if len(diff) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s on %s does not match the ledger after 10s:\n%s", name, url, strings.Join(diff, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func seriesDiff(got, want map[string]float64) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			out = append(out, fmt.Sprintf("missing {%s} (the ledger: %v)", k, want[k]))
		} else if g != want[k] {
			out = append(out, fmt.Sprintf("{%s} = %v, the ledger: %v", k, g, want[k]))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			out = append(out, fmt.Sprintf("unexpected {%s} = %v", k, got[k]))
		}
	}
	return out
}
