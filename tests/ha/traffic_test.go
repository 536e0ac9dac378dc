package ha_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// traffic is what the API server's own metrics count, by resource: the
// writes it served (apiserver_request_total, verbs that write) and the
// watch events it sent (apiserver_watch_events_total) and their bytes
// (apiserver_watch_events_sizes). Taken before and after a run, it says
// where a create's API server work goes beside the pod itself: the
// reservation and summary writes, the progress Leases, and each watcher's
// copy of every event.
type traffic map[string]float64

// apiTraffic reads the API server's /metrics into a traffic: keys
// "writes-<resource>", "events-<resource>", "event-bytes-<resource>"
// (<resource> with its subresource: gpureservationsets/status).
func apiTraffic(b *testing.B, k kubernetes.Interface) traffic {
	b.Helper()
	raw, err := k.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("the API server's metrics: %v", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		b.Fatalf("parsing the API server's metrics: %v", err)
	}
	out := traffic{}
	for _, m := range mfs["apiserver_request_total"].GetMetric() {
		l := labels(m.GetLabel())
		switch l["verb"] {
		case "POST", "PUT", "PATCH", "DELETE", "create", "update", "patch", "delete":
			res := l["resource"]
			if l["subresource"] != "" {
				res += "/" + l["subresource"]
			}
			out["writes-"+res] += m.GetCounter().GetValue()
		}
	}
	for _, m := range mfs["apiserver_watch_events_total"].GetMetric() {
		out["events-"+labels(m.GetLabel())["resource"]] += m.GetCounter().GetValue()
	}
	for _, m := range mfs["apiserver_watch_events_sizes"].GetMetric() {
		out["event-bytes-"+labels(m.GetLabel())["resource"]] += m.GetHistogram().GetSampleSum()
	}
	return out
}

func labels[P interface {
	GetName() string
	GetValue() string
}](ps []P) map[string]string {
	out := make(map[string]string, len(ps))
	for _, p := range ps {
		out[p.GetName()] = p.GetValue()
	}
	return out
}

// report reports, per create, what moved between before and after for
// the resources that moved at least once per 100 creates (bytes: at least
// 0.01 KiB per create, in KiB).
func (after traffic) report(b *testing.B, before traffic, creates int) {
	b.Helper()
	for key, v := range after {
		d, unit := (v-before[key])/float64(creates), "/create"
		if strings.HasPrefix(key, "event-bytes-") {
			d, unit = d/1024, "-KiB/create"
		}
		if d < 0.01 {
			continue
		}
		b.ReportMetric(d, strings.ReplaceAll(key, "/", ":")+unit)
	}
}
