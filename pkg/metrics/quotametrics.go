package metrics

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// Kinds of gpuadmit_ledger_problems (a fixed set: the label's values).
const (
	problemUnresolvedPod = "unresolved-pod"        // memory is a percentage of a device of unknown size
	problemInvalidPod    = "invalid-pod"           // invalid GPU request, or an unreadable device assignment
	problemInvalidQuota  = "invalid-quota"         // a ResourceQuota value not enforced as written (bytes, not whole: rounded down) or negative
	problemUngoverned    = "ungoverned-quota"      // a ResourceQuota limits. key of a resource no governed family has: nothing enforces it
	problemInvalidNode   = "invalid-node"          // a malformed device annotation (no namespace)
	problemInvalidSlice  = "invalid-resourceslice" // a ResourceSlice's pool or device refused (no namespace)
	problemInvalidClass  = "invalid-deviceclass"   // a DeviceClass outside the governed list that can select governed devices (no namespace)
	problemHeldCharge    = "held-charge"           // charged as admitted, above what edited annotations or dropped capacity say
)

// namespaceCollector exposes, from one ledger snapshot per scrape, what
// each namespace the ledger knows (GPU pods, reservations or GPU quotas)
// uses and what is wrong in it:
//
//   - gpuadmit_resourcequota{namespace, resourcequota, resource,
//     type="hard|used|reserved"}, shaped like kube-state-metrics'
//     kube_resourcequota, memory in MiB. Only limited resources have series:
//     at most namespaces with limits × 3 resources × 3 types.
//   - gpuadmit_ledger_problems{namespace, kind}: per namespace, the pods
//     whose memory is unresolved, the invalid pods and the ResourceQuotas
//     with unusable values, the pods whose charge is held above what edited
//     inputs say (0 when none: the series stay while the namespace is
//     known), and, cluster-wide (namespace ""), the nodes with malformed
//     device annotations, the ResourceSlices reported (a pool several
//     nodes publish, a node's copy of a network pool, an implausible
//     device) and the DeviceClasses outside the governed list that can
//     select governed devices: at most namespaces × 4 + 3 series.
//
// It also exposes the showback series (usagemetrics.go) from the same
// snapshot.
type namespaceCollector struct {
	ledger   Ledger
	store    reservation.Reader
	quota    *prometheus.Desc
	problems *prometheus.Desc
	showback showback
}

func newNamespaceCollector(l Ledger, store reservation.Reader) *namespaceCollector {
	return &namespaceCollector{ledger: l, store: store, showback: newShowback(),
		quota: prometheus.NewDesc("gpuadmit_resourcequota",
			"A namespace's tightest limit (hard, with the ResourceQuota that sets it; 0 while its value is invalid), what its recorded pods use (used) and what admitted pods not yet recorded hold (reserved), per managed resource; memory in MiB.",
			[]string{"namespace", "resourcequota", "resource", "type"}, nil),
		problems: prometheus.NewDesc("gpuadmit_ledger_problems",
			"Objects the ledger cannot fully count, by namespace and kind: unresolved-pod (memory a percentage of a device of unknown size: not in used), invalid-pod (invalid GPU request, or unreadable device assignment), invalid-quota (ResourceQuotas with a value that is not a non-negative whole number: the dimension blocks), invalid-node (nodes with a malformed device annotation; namespace empty), invalid-resourceslice (ResourceSlices reported by the DRA inventory: a pool published by several nodes (each one's slices), a node's copy of a pool that is not node-local, a device of implausible capacity; namespace empty), invalid-deviceclass (DeviceClasses outside the governed list that can select a governed driver's devices: its claims would hold them uncharged; namespace empty), held-charge (pods charged what their admission resolved, above what an annotation edited after binding or a node's dropped capacity says).",
			[]string{"namespace", "kind"}, nil),
	}
}

func (c *namespaceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.quota
	ch <- c.problems
	c.showback.describe(ch)
}

func (c *namespaceCollector) Collect(ch chan<- prometheus.Metric) {
	fams := c.ledger.Families()
	pending, err := c.store.Reserved(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.quota, fmt.Errorf("reading the reservations: %w", err))
		return
	}
	snap := c.ledger.Snapshot(pending)
	for ns, s := range snap.Namespaces {
		for _, u := range ledger.LimitUses(s, fams) {
			c.gauge(ch, c.quota, u.Limit, ns, u.Quota, u.Resource, "hard")
			c.gauge(ch, c.quota, u.Used, ns, u.Quota, u.Resource, "used")
			c.gauge(ch, c.quota, u.Reserved, ns, u.Quota, u.Resource, "reserved")
		}
		c.gauge(ch, c.problems, int64(len(s.Unresolved)), ns, problemUnresolvedPod)
		c.gauge(ch, c.problems, distinct(s.Problems, ledger.ProblemPod), ns, problemInvalidPod)
		c.gauge(ch, c.problems, distinct(s.Problems, ledger.ProblemQuota), ns, problemInvalidQuota)
		c.gauge(ch, c.problems, distinct(s.Problems, ledger.ProblemUngoverned), ns, problemUngoverned)
		c.gauge(ch, c.problems, distinct(s.Problems, ledger.ProblemCharge), ns, problemHeldCharge)
		c.showback.namespace(ch, fams, ns, s)
	}
	c.gauge(ch, c.problems, distinct(snap.Problems, ledger.ProblemNode), "", problemInvalidNode)
	c.gauge(ch, c.problems, distinct(snap.Problems, ledger.ProblemSlice), "", problemInvalidSlice)
	c.gauge(ch, c.problems, distinct(snap.Problems, ledger.ProblemDeviceClass), "", problemInvalidClass)
	c.showback.resourceInfo(ch, fams)
}

func (c *namespaceCollector) gauge(ch chan<- prometheus.Metric, d *prometheus.Desc, v int64, labels ...string) {
	gauge(ch, d, v, labels...)
}

// distinct counts the objects (namespace and name) with problems of kind:
// a quota with two bad values, or a pod reported twice, counts once.
func distinct(ps []ledger.Problem, kind ledger.ProblemKind) int64 {
	seen := map[[2]string]bool{}
	for _, p := range ps {
		if p.Kind == kind {
			seen[[2]string{p.Namespace, p.Name}] = true
		}
	}
	return int64(len(seen))
}
