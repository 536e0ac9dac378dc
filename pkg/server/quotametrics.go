package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/cache"
)

// quotaCollector exposes each namespace's limits and usage as
// kube-state-metrics exposes kube_resourcequota, read from the ledger at
// scrape time: gpuadmit_resourcequota{namespace, resourcequota, resource,
// type="hard|used|reserved"}, memory in MiB. Only limited resources have
// series: at most namespaces with limits × 3 resources × 3 types.
type quotaCollector struct {
	ledger *cache.Ledger
	desc   *prometheus.Desc
}

func newQuotaCollector(l *cache.Ledger) *quotaCollector {
	return &quotaCollector{ledger: l, desc: prometheus.NewDesc("gpuadmit_resourcequota",
		"A namespace's tightest limit (hard, with the ResourceQuota that sets it), what its recorded pods use (used) and what admitted pods not yet recorded hold (reserved), per managed resource; memory in MiB.",
		[]string{"namespace", "resourcequota", "resource", "type"}, nil)}
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	names := c.ledger.Settings().Names
	for ns, s := range c.ledger.Snapshot().Namespaces {
		for _, r := range []struct {
			name           string
			limit          *cache.Limit
			used, reserved int64
		}{
			{string(names.Count), s.Limits.GPU, s.Used.GPU, s.Reserved.GPU},
			{string(names.Memory), s.Limits.MemMiB, s.Used.MemMiB, s.Reserved.MemMiB},
			{string(names.Cores), s.Limits.Cores, s.Used.Cores, s.Reserved.Cores},
		} {
			if r.limit == nil {
				continue
			}
			for typ, v := range map[string]int64{"hard": r.limit.Value, "used": r.used, "reserved": r.reserved} {
				ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), ns, r.limit.Quota, r.name, typ)
			}
		}
	}
}
