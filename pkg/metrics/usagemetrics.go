package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// Values of the kind label of gpuadmit_namespace_charged_objects (a fixed
// set; the dimension label of gpuadmit_resource_info is
// effective.Dimension's).
const (
	objectPod         = "pod"
	objectClaim       = "claim"
	objectReservation = "reservation"
)

// showback is what the namespace collector exposes beyond the quotas, from
// the same ledger snapshot:
//
//   - gpuadmit_namespace_usage{namespace, family, resource,
//     type="used|reserved"}: every namespace with a charge, limited or not
//     (showback); memory in MiB. Only the families a namespace uses have
//     series: at most charged namespaces × families used × 3 resources × 2
//     types.
//   - gpuadmit_namespace_charged_objects{namespace, kind="pod|claim|reservation"}:
//     the GPU pods and governed ResourceClaims recorded, and the
//     reservations counted, of the same namespaces: at most charged
//     namespaces × 3.
//   - gpuadmit_namespace_over_limit{namespace, resourcequota, resource}: by
//     how much used + reserved passes a limit (ledger.OverLimits: a quota
//     lowered under what was admitted); memory in MiB. At most namespaces
//     over a limit × families × 3 resources.
//   - gpuadmit_resource_info{family, resource, dimension="count|memory|cores"}:
//     1 for each configured resource, so that a query can pick the memory
//     resources whatever their names (families × 3).
type showback struct {
	usage, objects, overLimit, resources *prometheus.Desc
}

func newShowback() showback {
	return showback{
		usage: prometheus.NewDesc("gpuadmit_namespace_usage",
			"What a namespace's recorded GPU pods and claims use (used) and what its admitted pods not yet recorded hold (reserved), per family and managed resource, for every namespace with a charge, whether or not a ResourceQuota limits it; memory in MiB.",
			[]string{"namespace", "family", "resource", "type"}, nil),
		objects: prometheus.NewDesc("gpuadmit_namespace_charged_objects",
			"The objects a namespace is charged for: GPU pods (pod) and ResourceClaims of governed DeviceClasses (claim) recorded, reservations counted (reservation).",
			[]string{"namespace", "kind"}, nil),
		overLimit: prometheus.NewDesc("gpuadmit_namespace_over_limit",
			"By how much a namespace's used + reserved passes its tightest limit on a resource (set by ResourceQuota resourcequota), when it does: a quota lowered under what was already admitted; memory in MiB. No series while within the limit.",
			[]string{"namespace", "resourcequota", "resource"}, nil),
		resources: prometheus.NewDesc("gpuadmit_resource_info",
			"1 for each managed resource: its family and its dimension (count, memory in MiB, cores in percent of a device).",
			[]string{"family", "resource", "dimension"}, nil),
	}
}

func (s showback) describe(ch chan<- *prometheus.Desc) {
	ch <- s.usage
	ch <- s.objects
	ch <- s.overLimit
	ch <- s.resources
}

// namespace emits the showback series of namespace ns.
func (s showback) namespace(ch chan<- prometheus.Metric, fams []effective.Family, ns string, n ledger.NamespaceSnapshot) {
	for _, o := range ledger.OverLimits(n, fams) {
		gauge(ch, s.overLimit, o.Charged()-o.Limit, ns, o.Quota, o.Resource)
	}
	if !charged(n) {
		return
	}
	for i := range fams {
		s.family(ch, &fams[i], ns, n)
	}
	gauge(ch, s.objects, int64(n.Pods), ns, objectPod)
	gauge(ch, s.objects, int64(n.Claims), ns, objectClaim)
	gauge(ch, s.objects, int64(n.Reservations), ns, objectReservation)
}

// family emits the usage of family f in ns, when it has any.
func (s showback) family(ch chan<- prometheus.Metric, f *effective.Family, ns string, n ledger.NamespaceSnapshot) {
	used, reserved := n.Used.Of(f.Name), n.Reserved.Of(f.Name)
	if used.IsZero() && reserved.IsZero() {
		return
	}
	for _, d := range effective.Dimensions() {
		name := string(f.Names.Of(d))
		if name == "" {
			continue
		}
		gauge(ch, s.usage, used.Get(d), ns, f.Name, name, "used")
		gauge(ch, s.usage, reserved.Get(d), ns, f.Name, name, "reserved")
	}
}

// resourceInfo emits gpuadmit_resource_info for every resource of fams.
func (s showback) resourceInfo(ch chan<- prometheus.Metric, fams []effective.Family) {
	for i := range fams {
		f := &fams[i]
		for _, d := range effective.Dimensions() {
			if name := f.Names.Of(d); name != "" {
				gauge(ch, s.resources, 1, f.Name, string(name), d.String())
			}
		}
	}
}

// charged reports whether n is charged anything: recorded pods or claims,
// reservations, or usage.
func charged(n ledger.NamespaceSnapshot) bool {
	return n.Pods > 0 || n.Claims > 0 || n.Reservations > 0 || !n.Used.IsZero() || !n.Reserved.IsZero()
}

func gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v int64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
}
