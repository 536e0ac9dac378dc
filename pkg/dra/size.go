package dra

import (
	"fmt"
	"slices"
)

// DefaultMemoryBoundMiB is the plausibility bound of a device's published
// memory when none is configured for its family: 1 TiB, above the largest
// device NVIDIA ships. A device that publishes more (or nothing above 0) is
// a reported problem and resolves nobody's charge, neither raising nor
// lowering it.
const DefaultMemoryBoundMiB = int64(1) << 20

// boundOf is the charger's plausibility bound of family's device memory
// in MiB.
func (c *Charger) boundOf(family string) int64 {
	if c.bound != nil {
		if b := c.bound(family); b > 0 {
			return b
		}
	}
	return DefaultMemoryBoundMiB
}

// memoryMiB is the device's memory capacity name in MiB (bytes rounded
// up); false when it publishes none, an invalid one, or one outside
// 1..bound MiB (implausible: not used to resolve a charge).
func (d *device) memoryMiB(name string, bound int64) (int64, bool) {
	m, ok, err := d.rawMemoryMiB(name)
	if !ok || err != nil || m <= 0 || m > bound {
		return 0, false
	}
	return m, true
}

// rawMemoryMiB is the device's memory capacity name in MiB as published;
// ok false when it publishes none.
func (d *device) rawMemoryMiB(name string) (int64, bool, error) {
	q, ok := d.capacityValue(name)
	if !ok {
		return 0, false, nil
	}
	if q.Sign() <= 0 {
		return 0, true, nil
	}
	b, err := quantityInt(q)
	if err != nil {
		return 0, true, err
	}
	return ceilMiB(b), true, nil
}

// largestMiB is the largest plausible memory among devs; unknown is
// whether some device of devs publishes no plausible memory (none, or one
// outside 1..bound MiB).
func largestMiB(devs []*device, capName string, bound int64) (best int64, unknown bool) {
	for _, d := range devs {
		if m, ok := d.memoryMiB(capName, bound); ok {
			best = max(best, m)
		} else {
			unknown = true
		}
	}
	return best, unknown
}

// worstNodeCount is the most of devs one node can reach: the devices bound
// to that node plus those reachable from several nodes. An allocation (of
// mode All) is made on one node, so this bounds what it takes.
func worstNodeCount(devs []*device) int64 {
	var shared, most int64
	perNode := map[string]int64{}
	for _, d := range devs {
		if d.node == "" {
			shared++
			continue
		}
		perNode[d.node]++
		most = max(most, perNode[d.node])
	}
	return shared + most
}

// Implausible lists the devices of inv a governed class would size whose
// published memory is not a whole number of bytes, is not above 0, or is
// above the bound of the class's family: none of them resolves anyone's
// charge (sorted; one problem per device and memory capacity name).
func (c *Charger) Implausible(inv *Inventory) []SliceProblem {
	if c == nil || inv.Len() == 0 {
		return nil
	}
	type checked struct {
		device  int
		capName string
		bound   int64
	}
	var out []SliceProblem
	seen := map[checked]bool{}
	for i := range c.classes {
		cl := &c.classes[i]
		bound := c.boundOf(cl.Family)
		for _, idx := range inv.candidates(cl.Driver) {
			d := &inv.devices[idx]
			key := checked{idx, cl.MemoryCapacity, bound}
			if seen[key] {
				continue
			}
			seen[key] = true
			if msg := implausible(d, cl, bound); msg != "" {
				out = append(out, SliceProblem{Slice: d.slice, Driver: d.id.driver, Pool: d.id.pool, Node: d.owner,
					Device: d.id.name, Message: msg})
			}
		}
	}
	sortProblems(out)
	return slices.Compact(out)
}

// implausible says why d's memory cannot size a device of cl ("" when it
// can, or when d publishes no memory).
func implausible(d *device, cl *Class, bound int64) string {
	m, ok, err := d.rawMemoryMiB(cl.MemoryCapacity)
	switch {
	case !ok:
		return ""
	case err != nil:
		return fmt.Sprintf("capacity %q: %v: not used to size %s devices", cl.MemoryCapacity, err, cl.Family)
	case m <= 0:
		return fmt.Sprintf("capacity %q is not above 0: not used to size %s devices", cl.MemoryCapacity, cl.Family)
	case m > bound:
		return fmt.Sprintf("capacity %q is %d MiB, above the %d MiB a %s device can hold: not used to size anyone's charge",
			cl.MemoryCapacity, m, bound, cl.Family)
	}
	return ""
}
