package ledger

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// The model test's checks (model_test.go): the ledger against a
// from-scratch recount of the model's world, and against a ledger rebuilt
// from its objects.

// recount is a usage recounted by the model: per family, a plain sum of
// vectors (zero vectors kept; sameUsage drops them).
type recount map[string]effective.Vector

func (r recount) add(u effective.Usage) {
	for f, v := range u {
		r[f], _ = r[f].Add(v)
	}
}

// sameUsage reports how got, a usage of the ledger, differs from the
// recount want: the same families with the same vectors, no zero vector
// stored, nothing negative.
func sameUsage(got effective.Usage, want recount) error {
	if err := usageInvariant(got); err != nil {
		return fmt.Errorf("%v: %w", got, err)
	}
	for _, f := range union(got, want) {
		if got[f] != want[f] {
			return fmt.Errorf("family %q: ledger %v, recomputed %v", f, got[f], want[f])
		}
	}
	return nil
}

// check compares the ledger with a from-scratch recomputation over the
// current objects, per family.
func (m *model) check() error {
	if m.err != nil {
		return m.err
	}
	type nsWant struct {
		used, reserved, unconfirmed recount
		pods, unresolved, resvCount int
	}
	want := map[string]*nsWant{}
	get := func(ns string) *nsWant {
		if want[ns] == nil {
			want[ns] = &nsWant{used: recount{}, reserved: recount{}, unconfirmed: recount{}}
		}
		return want[ns]
	}
	devs := map[string]map[string]effective.Vector{}
	recs, invalid := 0, 0
	for _, p := range m.pods {
		d := m.oracle(p)
		if d.invalid != nil {
			invalid++
		}
		if d.rec == nil {
			continue
		}
		recs++
		if len(d.rec.used) > 1 {
			m.exercised["pod of two families"]++
		}
		w := get(p.Namespace)
		w.used.add(d.rec.used)
		w.pods++
		if len(d.rec.unresolved) > 0 {
			w.unresolved++
		}
		for _, du := range d.rec.devices {
			if devs[d.rec.node] == nil {
				devs[d.rec.node] = map[string]effective.Vector{}
			}
			devs[d.rec.node][du.uuid], _ = devs[d.rec.node][du.uuid].Add(du.used)
		}
	}
	for ns, rs := range m.pending {
		w := get(ns)
		w.resvCount += m.countPending(w.reserved, w.unconfirmed, ns, rs)
	}
	snap := m.l.Snapshot(m.pending)
	if snap.Stats.Pods != recs || snap.Stats.InvalidPods != invalid {
		return fmt.Errorf("stats %+v, want %d pods and %d invalid", snap.Stats, recs, invalid)
	}
	for _, ns := range union(want, snap.Namespaces) {
		w, g := get(ns), snap.Namespaces[ns]
		for _, u := range []struct {
			what string
			got  effective.Usage
			want recount
		}{{"used", g.Used, w.used}, {"reserved", g.Reserved, w.reserved}, {"unconfirmed", g.Unconfirmed, w.unconfirmed}} {
			if err := sameUsage(u.got, u.want); err != nil {
				return fmt.Errorf("namespace %s: %s: %w", ns, u.what, err)
			}
		}
		if g.Pods != w.pods || len(g.Unresolved) != w.unresolved || g.Reservations != w.resvCount {
			return fmt.Errorf("namespace %s: ledger %d pods, %d unresolved, %d reservations; recomputed %d, %d, %d",
				ns, g.Pods, len(g.Unresolved), g.Reservations, w.pods, w.unresolved, w.resvCount)
		}
		if err := m.checkLimits(ns, g.Limits); err != nil {
			return err
		}
		for _, f := range g.Used.Families() {
			m.exercised["used "+f]++
		}
		for _, f := range g.Reserved.Families() {
			m.exercised["reserved "+f]++
		}
		for f := range g.Limits {
			m.exercised["limits "+f]++
		}
		if one := m.l.Namespace(ns, m.pending[ns]); !one.Reserved.Equal(g.Reserved) || !one.Used.Equal(g.Used) {
			return fmt.Errorf("namespace %s: Namespace %v/%v, Snapshot %v/%v", ns, one.Used, one.Reserved, g.Used, g.Reserved)
		}
	}
	for _, node := range union(devs, snap.Nodes) {
		g := snap.Nodes[node].Devices
		for _, id := range union(devs[node], g) {
			if g[id].Used != devs[node][id] {
				return fmt.Errorf("node %s device %s: ledger %v, recomputed %v", node, id, g[id].Used, devs[node][id])
			}
			if err := nonNegative(g[id].Used); err != nil {
				return fmt.Errorf("node %s device %s: %w", node, id, err)
			}
		}
	}
	return nil
}

// checkLimits compares the limits of ns, per family, with the tightest
// value per dimension over the world's quotas of ns (a value that is not
// whole rounded down, a memory value in bytes in MiB, an invalid value
// blocks: 0); a family without any limit is absent.
func (m *model) checkLimits(ns string, got map[string]Limits) error {
	fams := m.l.Families()
	for f := range got {
		if !slices.ContainsFunc(fams, func(x effective.Family) bool { return x.Name == f }) {
			return fmt.Errorf("namespace %s: limits of unknown family %q: %+v", ns, f, got[f])
		}
	}
	for _, fam := range fams {
		var want [3]*int64
		for key, q := range m.quotas {
			if !strings.HasPrefix(key, ns+"/") {
				continue
			}
			for i, res := range []corev1.ResourceName{fam.Names.Count, fam.Names.Memory, fam.Names.Cores} {
				v, ok := q.Spec.Hard["limits."+res]
				if !ok {
					continue
				}
				n := int64(math.Floor(v.AsApproximateFloat64())) // not whole: rounded down
				if i == 1 && v.Format == resource.BinarySI {
					n >>= 20 // a memory limit in bytes: MiB, rounded down
				}
				if n < 0 {
					n = 0 // invalid blocks
				}
				if want[i] == nil || n < *want[i] {
					want[i] = &n
				}
			}
		}
		g, present := got[fam.Name]
		if present != (want != [3]*int64{}) {
			return fmt.Errorf("namespace %s: family %s: limits present %v, want %v (%+v)", ns, fam.Name, present, !present, g)
		}
		for i, l := range []*Limit{g.GPU, g.MemMiB, g.Cores} {
			if (l == nil) != (want[i] == nil) || (l != nil && l.Value != *want[i]) {
				return fmt.Errorf("namespace %s: family %s: limit %d: ledger %+v, want %v", ns, fam.Name, i, l, want[i])
			}
		}
	}
	return nil
}

// checkRebuilt compares the ledger with one rebuilt from the current objects.
func (m *model) checkRebuilt() error {
	fresh := New(Options{Families: m.l.Families()})
	var events []func() // in key order, then shuffled by the seed
	for _, uid := range m.uids() {
		events = append(events, func() { fresh.UpsertPod(m.pods[uid]) })
	}
	for _, name := range slices.Sorted(maps.Keys(m.nodes)) {
		events = append(events, func() { fresh.UpsertNode(m.nodes[name]) })
	}
	for _, key := range slices.Sorted(maps.Keys(m.quotas)) {
		events = append(events, func() { fresh.UpsertQuota(m.quotas[key]) })
	}
	m.r.Shuffle(len(events), func(i, j int) { events[i], events[j] = events[j], events[i] })
	for _, f := range events {
		f()
	}
	a, b := m.l.Snapshot(nil), fresh.Snapshot(nil)
	// A pod charged at what its admission resolved, above what the nodes now
	// say, is charged less by a ledger that never saw its admission: never
	// more, unless a pending pod of the namespace kept a smaller first size.
	held := m.held()
	for ns, lessOnly := range held {
		if x, y := a.Namespaces[ns], b.Namespaces[ns]; lessOnly && !x.Used.Max(y.Used).Equal(x.Used) {
			return fmt.Errorf("namespace %s: rebuilt charges %v, more than the ledger's %v", ns, y.Used, x.Used)
		}
		delete(a.Namespaces, ns)
		delete(b.Namespaces, ns)
	}
	a.Problems, b.Problems = withoutHeld(a.Problems, held), withoutHeld(b.Problems, held)
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("\nledger  %+v\nrebuilt %+v", a, b)
	}
	return nil
}

// withoutHeld returns ps without the charge problems and the problems of the
// held namespaces; nil when none is left, so that a snapshot whose only
// problems were dropped compares equal to one that had none.
func withoutHeld(ps []Problem, held map[string]bool) []Problem {
	out := slices.DeleteFunc(slices.Clone(ps), func(p Problem) bool { return p.Kind == ProblemCharge || hasKey(held, p.Namespace) })
	if len(out) == 0 {
		return nil
	}
	return out
}

func nonNegative(vs ...effective.Vector) error {
	for _, v := range vs {
		if v.GPU < 0 || v.MemMiB < 0 || v.Cores < 0 {
			return errors.New("negative usage " + v.String())
		}
	}
	return nil
}

func union[A, B any](a map[string]A, b map[string]B) []string {
	set := map[string]bool{}
	for k := range a {
		set[k] = true
	}
	for k := range b {
		set[k] = true
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	return out
}

// countPending adds to reserved and unconfirmed what the reservations rs
// handed in for ns add, recounted from the objects: each reservation the
// watch has not recorded counts in full, except under a name a recorded
// (or invalid) pod of another UID holds, where only the largest
// reservation's excess over that pod's charge counts, once per name. It
// returns how many reservations (or names) added something.
func (m *model) countPending(reserved, unconfirmed recount, ns string, rs []reservation.Reservation) int {
	type name struct{ held, largest, unconfirmed effective.Usage }
	names := map[string]*name{}
	var order []string
	n := 0
	for _, r := range rs {
		if !m.counts(r) {
			continue
		}
		if held, ok := m.holder(ns, r); ok {
			g := names[r.Name]
			if g == nil {
				g = &name{held: held}
				names[r.Name] = g
				order = append(order, r.Name)
			}
			g.largest = g.largest.Max(r.Demand)
			if r.Unconfirmed {
				g.unconfirmed = g.unconfirmed.Max(r.Demand)
			}
			continue
		}
		reserved.add(r.Demand)
		if r.Unconfirmed {
			unconfirmed.add(r.Demand)
		}
		n++
	}
	for _, k := range order {
		g := names[k]
		excess := g.largest.Max(g.held).Sub(g.held)
		if excess.IsZero() {
			continue
		}
		reserved.add(excess)
		unconfirmed.add(g.unconfirmed.Max(g.held).Sub(g.held))
		n++
	}
	return n
}
