package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// deviceCollector exposes the capacity and the recorded usage of every GPU
// device the ledger knows, read from one ledger snapshot per scrape:
// gpuadmit_device{node, uuid, model, resource, type="capacity|used"} for
// the configured memory (MiB) and cores resources. A device that pods use
// but its node does not announce has only used series (model ""): at most
// devices × 2 resources × 2 types.
type deviceCollector struct {
	ledger Ledger
	desc   *prometheus.Desc
}

func newDeviceCollector(l Ledger) *deviceCollector {
	return &deviceCollector{ledger: l, desc: prometheus.NewDesc("gpuadmit_device",
		"A GPU device's capacity (as its node announces it) and the usage the ledger charges to it (its recorded pods' device assignments), per managed resource; memory in MiB, cores in percent of the device.",
		[]string{"node", "uuid", "model", "resource", "type"}, nil)}
}

func (c *deviceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *deviceCollector) Collect(ch chan<- prometheus.Metric) {
	names := c.ledger.Families()[0].Names // the devices the capacity annotations describe
	mem, cores := string(names.Memory), string(names.Cores)
	emit := func(v int64, node, uuid, model, resource, typ string) {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v), node, uuid, model, resource, typ)
	}
	for node, nu := range c.ledger.Snapshot(nil).Nodes {
		for uuid, d := range nu.Devices {
			model := ""
			if d.Capacity != nil {
				model = d.Capacity.Model
				emit(d.Capacity.MemMiB, node, uuid, model, mem, "capacity")
				emit(d.Capacity.Cores, node, uuid, model, cores, "capacity")
			}
			emit(d.Used.MemMiB, node, uuid, model, mem, "used")
			emit(d.Used.Cores, node, uuid, model, cores, "used")
		}
	}
}
