package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// NamespaceSnapshot is what admission needs to know about one namespace.
// No lock is held while it is read. Its Used, Limits (and the Limit each
// points to), Quotas, NativeRequestQuotas and Labels are shared with the
// ledger and with other snapshots: read only (the ledger replaces them,
// never writes into them; a reader that wants another value builds its
// own, as Limits.With does). The rest is the snapshot's own.
type NamespaceSnapshot struct {
	Namespace string `json:"namespace"`
	// Used is the sum of the stored effective demands of the namespace's
	// pods, shared with the ledger (which replaces it on every change):
	// read only.
	Used effective.Usage `json:"used"`
	// Reserved is the sum of the reservations handed in that count: admitted
	// pods the watch has not recorded yet (reservation.go).
	Reserved effective.Usage `json:"reserved"`
	// Unconfirmed is the part of Reserved whose pods no replica has
	// recorded yet (Reservation.Unconfirmed).
	Unconfirmed effective.Usage `json:"unconfirmed,omitempty"`
	// Pods is the number of GPU pods recorded; Reservations the number of
	// reservations counted in Reserved.
	Pods         int `json:"pods"`
	Reservations int `json:"reservations"`
	// Claims is the number of ResourceClaims of governed classes recorded,
	// and of pods' template claims not created yet (charged under their
	// pods); their charge is in Used.
	Claims int `json:"claims,omitempty"`
	// Limits is, per family, the tightest limit per dimension over the
	// ResourceQuotas of the namespace without scopes, with the quota that
	// set it (a family or a dimension without a limit is absent): they
	// limit every pod and claim, against Used. Shared, read only (see
	// NamespaceSnapshot).
	Limits map[string]Limits `json:"limits"`
	// Scoped lists the ResourceQuotas with scopes (spec.scopes,
	// spec.scopeSelector), by name: each limits only the pods that match
	// it, against its own Used (scoped.go).
	Scoped []ScopedQuota `json:"scoped,omitempty"`
	// Quotas lists every ResourceQuota with managed keys, by name.
	Quotas []QuotaSnapshot `json:"quotas,omitempty"`
	// NativeRequestQuotas lists "quota: key" for native requests.<managed>
	// quotas (counted by Kubernetes per container, without init semantics).
	NativeRequestQuotas []string `json:"nativeRequestQuotas,omitempty"`
	// Unresolved lists pods whose memory is a percentage of a device of
	// unknown size: their memory is not in Used.
	Unresolved []UnresolvedPod `json:"unresolved,omitempty"`
	// Problems lists invalid quota values and pods that are not (fully)
	// recorded, sorted.
	Problems []Problem `json:"problems,omitempty"`
	// Labels are the namespace's labels, shared with the ledger: read
	// only. LabelsKnown is false until the namespace watch (or the state
	// the ledger was built from) reported the namespace.
	Labels      map[string]string `json:"-"`
	LabelsKnown bool              `json:"-"`
}

// Limit is one quota limit. Memory limits are MiB.
type Limit struct {
	Value int64  `json:"value"`
	Quota string `json:"quota"`
	Key   string `json:"key"`
	// Invalid: the quota's value is unusable (see the namespace's problems);
	// the limit blocks (Value 0) until it is fixed.
	Invalid bool `json:"invalid,omitempty"`
}

// Limits are the limits per dimension; nil means no limit. A snapshot's
// Limits point at the ledger's own Limit values: never write through them.
type Limits struct {
	GPU    *Limit `json:"gpu,omitempty"`
	MemMiB *Limit `json:"gpumem,omitempty"`
	Cores  *Limit `json:"gpucores,omitempty"`
}

// cloneLimits copies limits per family (nil for none).
func cloneLimits(m map[string]Limits) map[string]Limits {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]Limits, len(m))
	for f, l := range m {
		out[f] = l.clone()
	}
	return out
}

// Of is the limit of dimension d (nil: none).
func (l Limits) Of(d effective.Dimension) *Limit {
	switch d {
	case effective.DimensionCount:
		return l.GPU
	case effective.DimensionMemory:
		return l.MemMiB
	case effective.DimensionCores:
		return l.Cores
	}
	return nil
}

// With is l with the limit of dimension d replaced by lim.
func (l Limits) With(d effective.Dimension, lim *Limit) Limits {
	switch d {
	case effective.DimensionCount:
		l.GPU = lim
	case effective.DimensionMemory:
		l.MemMiB = lim
	case effective.DimensionCores:
		l.Cores = lim
	}
	return l
}

func (l Limits) clone() Limits {
	c := func(p *Limit) *Limit {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	return Limits{GPU: c(l.GPU), MemMiB: c(l.MemMiB), Cores: c(l.Cores)}
}

// QuotaSnapshot is one ResourceQuota's managed limits.
type QuotaSnapshot struct {
	Name           string            `json:"name"`
	Limits         map[string]Limits `json:"limits"`
	NativeRequests []string          `json:"nativeRequests,omitempty"`
	// Scopes describe the quota's scopes and scopeSelector (none: it
	// limits every pod).
	Scopes []string `json:"scopes,omitempty"`
}

// UnresolvedPod names a pod and its containers whose memory is unresolved.
type UnresolvedPod struct {
	Pod        string   `json:"pod"`
	Containers []string `json:"containers"`
}

// ProblemKind says what kind of object a problem is about.
type ProblemKind string

// Problem kinds.
const (
	// ProblemQuota: a ResourceQuota value not enforced as written (bytes on
	// a memory key, not a whole number: rounded down) or not usable
	// (negative: the dimension blocks).
	ProblemQuota ProblemKind = "quota"
	// ProblemUngoverned: a ResourceQuota limits. key of a resource no
	// governed family has: nothing enforces it.
	ProblemUngoverned ProblemKind = "ungoverned"
	ProblemPod        ProblemKind = "pod"  // an invalid GPU request, or an unreadable device assignment
	ProblemNode       ProblemKind = "node" // a malformed device annotation
	// ProblemCharge: a pod charged above what its inputs now say (an
	// annotation edited after binding, node capacity dropped): a charge
	// goes down only through the pod's lifecycle.
	ProblemCharge ProblemKind = "charge"
	// ProblemClaim: a ResourceClaim of a governed class whose demand cannot
	// be read (or only in part).
	ProblemClaim ProblemKind = "claim"
)

// Problem is input the ledger could not use, reported instead of ignored.
type Problem struct {
	Kind      ProblemKind `json:"kind"`
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	// UID is the object's (a ResourceQuota's: its Events name it).
	UID     types.UID `json:"-"`
	Key     string    `json:"key,omitempty"`
	Value   string    `json:"value,omitempty"`
	Message string    `json:"message"`
}

func (p Problem) String() string {
	obj := p.Name
	if p.Namespace != "" {
		obj = p.Namespace + "/" + p.Name
	}
	if p.Key != "" {
		return fmt.Sprintf("%s %s: %s %q: %s", p.Kind, obj, p.Key, p.Value, p.Message)
	}
	return fmt.Sprintf("%s %s: %s", p.Kind, obj, p.Message)
}

func sortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Message, b.Message))
	})
}

// Namespace returns a snapshot of one namespace (zero usage and no limits
// for a namespace the ledger does not know), counting the reservations of
// pending it has not recorded (reservation.go).
func (l *Ledger) Namespace(ns string, pending []reservation.Reservation) NamespaceSnapshot {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.namespaceLocked(ns, pending)
}

func (l *Ledger) namespaceLocked(name string, pending []reservation.Reservation) NamespaceSnapshot {
	s := NamespaceSnapshot{Namespace: name}
	s.Labels, s.LabelsKnown = l.nsLabels[name]
	l.countLocked(&s, pending)
	n := l.namespaces[name]
	if n == nil {
		return s
	}
	s.Used, s.Pods, s.Claims = n.used, n.pods, n.claims // the ledger replaces used, never changes it
	if v := n.view; v != nil {
		s.Limits, s.Quotas, s.NativeRequestQuotas = v.limits, v.quotas, v.native
		s.Problems = slices.Clone(v.problems) // appended to and sorted below
	}
	s.Scoped = n.scopedQuotas()
	for _, r := range n.unresolved {
		s.Unresolved = append(s.Unresolved, UnresolvedPod{Pod: r.name, Containers: slices.Clone(r.unresolved)})
	}
	slices.SortFunc(s.Unresolved, func(a, b UnresolvedPod) int { return cmp.Compare(a.Pod, b.Pod) })
	for _, inv := range n.invalid {
		s.Problems = append(s.Problems, inv.problem)
	}
	for _, r := range n.warned {
		s.Problems = append(s.Problems, *r.warning)
	}
	for _, p := range n.claimProblems {
		s.Problems = append(s.Problems, *p)
	}
	sortProblems(s.Problems)
	return s
}

// Snapshot is the whole ledger, for the CLI, debugging and tests.
type Snapshot struct {
	Namespaces map[string]NamespaceSnapshot `json:"namespaces"`
	Nodes      map[string]NodeUsage         `json:"nodes"`
	// Problems lists every problem (quotas, pods, nodes), sorted.
	Problems []Problem `json:"problems,omitempty"`
	Stats    Stats     `json:"stats"`
}

// NodeUsage is the per-device capacity and usage of one node.
type NodeUsage struct {
	Devices map[string]DeviceUsage `json:"devices"`
}

// DeviceUsage is one device's capacity (nil when the node does not announce
// the device) and the sum of the usage charged to it.
type DeviceUsage struct {
	Capacity *DeviceCapacity  `json:"capacity,omitempty"`
	Used     effective.Vector `json:"used"`
}

// Stats are the ledger's sizes.
type Stats struct {
	Pods        int `json:"pods"`
	InvalidPods int `json:"invalidPods"`
	// Reservations counts the reservations a Snapshot counted (0 in Stats:
	// the ledger holds none).
	Reservations int `json:"reservations"`
	Namespaces   int `json:"namespaces"`
	Nodes        int `json:"nodes"`
}

// Stats returns the ledger's sizes without copying it (for metrics).
func (l *Ledger) Stats() Stats {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return Stats{Pods: len(l.pods), InvalidPods: len(l.invalid), Namespaces: len(l.namespaces), Nodes: len(l.nodes)}
}

// Snapshot copies the whole ledger: every namespace (those of pending, the
// reservations by namespace, included) and every node that has GPU devices
// or device usage.
func (l *Ledger) Snapshot(pending map[string][]reservation.Reservation) Snapshot {
	// Outside the lock (CEL): no deadline here, the charger's CEL budget
	// bounds each DeviceClass, and the inventory memoises the result.
	draProblems := l.DRAProblems(context.Background())
	l.mu.RLock()
	defer l.mu.RUnlock()
	s := Snapshot{Namespaces: make(map[string]NamespaceSnapshot, len(l.namespaces)), Nodes: map[string]NodeUsage{},
		Problems: draProblems}
	for name := range l.namespaces {
		s.Namespaces[name] = NamespaceSnapshot{}
	}
	for name := range pending {
		s.Namespaces[name] = NamespaceSnapshot{}
	}
	for name := range s.Namespaces {
		ns := l.namespaceLocked(name, pending[name])
		s.Namespaces[name] = ns
		s.Problems = append(s.Problems, ns.Problems...)
		s.Stats.Reservations += ns.Reservations
	}
	for name, nd := range l.nodes {
		s.Problems = append(s.Problems, nd.problems...)
		if len(nd.devices) == 0 && len(nd.used) == 0 {
			continue
		}
		nu := NodeUsage{Devices: make(map[string]DeviceUsage, max(len(nd.devices), len(nd.used)))}
		for _, d := range nd.devices {
			dc := deviceCapacity(d)
			nu.Devices[d.UUID] = DeviceUsage{Capacity: &dc, Used: nd.used[d.UUID]}
		}
		for id, v := range nd.used {
			if _, ok := nu.Devices[id]; !ok {
				nu.Devices[id] = DeviceUsage{Used: v}
			}
		}
		s.Nodes[name] = nu
	}
	sortProblems(s.Problems)
	s.Stats.Pods, s.Stats.InvalidPods = len(l.pods), len(l.invalid)
	s.Stats.Namespaces, s.Stats.Nodes = len(l.namespaces), len(l.nodes)
	return s
}
