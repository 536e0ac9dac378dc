package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
)

// DRA inputs the ledger does not charge but reports on: the devices the
// ResourceSlices publish that the inventory refused or that no charge may
// be sized by (dra.Inventory.Problems, dra.Charger.Implausible), and the
// DeviceClasses outside the governed list whose selectors can select a
// governed driver's devices (dra.Charger.UngovernedClass): a claim of such
// a class would hold governed devices uncharged.

// Problem kinds of DRA inputs.
const (
	// ProblemSlice: a ResourceSlice's pool or device that is not used (a
	// node publishing another node's pool, an untrusted network pool, an
	// implausible memory capacity), or a pool several nodes publish.
	ProblemSlice ProblemKind = "resourceslice"
	// ProblemDeviceClass: a DeviceClass gpuadmit does not govern that can
	// select a governed driver's devices.
	ProblemDeviceClass ProblemKind = "deviceclass"
)

// UpsertDeviceClass records a DeviceClass (its selectors are checked when
// the problems are read: the devices they may select change with the
// slices). One that can select governed devices is logged here.
func (l *Ledger) UpsertDeviceClass(dc *resourcev1.DeviceClass) {
	if l.charger == nil {
		return
	}
	// No CEL under the ledger's lock: the inventory is taken, the class
	// checked (bounded by the charger's CEL budget; a watch event has no
	// deadline), then recorded.
	if err := l.charger.UngovernedClass(context.Background(), dc, l.Inventory()); err != nil {
		l.log.Info("problem", "kind", ProblemDeviceClass, "name", dc.Name, "message", err.Error())
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.deviceClasses == nil {
		l.deviceClasses = map[string]*resourcev1.DeviceClass{}
	}
	l.deviceClasses[dc.Name] = dc
}

// DeleteDeviceClass forgets a DeviceClass.
func (l *Ledger) DeleteDeviceClass(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.deviceClasses, name)
}

// DRAProblems are the problems of the DRA inputs: refused or conflicting
// slices, implausible devices and DeviceClasses that can select governed
// devices uncharged (sorted). The DeviceClasses' selectors are evaluated
// outside the ledger's lock, under ctx and the charger's CEL budget, and
// memoised by the inventory until the slices change.
func (l *Ledger) DRAProblems(ctx context.Context) []Problem {
	if l.charger == nil {
		return nil
	}
	inv := l.Inventory()
	l.mu.RLock()
	classes := slices.Collect(maps.Values(l.deviceClasses))
	l.mu.RUnlock()
	var out []Problem
	for _, p := range append(inv.Problems(), l.charger.Implausible(inv)...) {
		where := "not node-local"
		if p.Node != "" {
			where = "node " + p.Node
		}
		pr := Problem{Kind: ProblemSlice, Name: p.Slice, Message: fmt.Sprintf("driver %s, pool %s (%s): %s", p.Driver, p.Pool, where, p.Message)}
		if p.Device != "" {
			pr.Key, pr.Value = "device", p.Device
		}
		out = append(out, pr)
	}
	for _, dc := range classes {
		if err := l.charger.UngovernedClass(ctx, dc, inv); err != nil {
			out = append(out, Problem{Kind: ProblemDeviceClass, Name: dc.Name, Message: err.Error()})
		}
	}
	sortProblems(out)
	return out
}
