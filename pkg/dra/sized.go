package dra

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// Sized reports whether alloc says what the claim of spec holds: it is
// set, and every device it allocates to a request of a governed class is
// published in inv, by the node the claim is allocated on (or in a pool
// that is not node-local), with that class's memory capacity, plausibly
// sized (within the family's bound). Only then may an
// allocation lower a claim's charge (the ledger's floor): an allocated
// device the inventory does not know (its ResourceSlice absent for a
// moment, or never published) sizes nothing.
func (c *Charger) Sized(spec *resourcev1.ResourceClaimSpec, alloc *resourcev1.AllocationResult, inv *Inventory) bool {
	if c == nil || spec == nil || alloc == nil {
		return false
	}
	classes := map[string]*Class{}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			classes[r.Name] = c.class(r.Exactly.DeviceClassName)
		}
		for j := range r.FirstAvailable {
			classes[r.Name+"/"+r.FirstAvailable[j].Name] = c.class(r.FirstAvailable[j].DeviceClassName)
		}
	}
	node := allocatedNode(alloc)
	for i := range alloc.Devices.Results {
		res := &alloc.Devices.Results[i]
		cl, ok := classes[res.Request]
		if !ok {
			return false // a result for no request of the claim: nothing is known
		}
		if cl == nil {
			continue // not governed
		}
		d := inv.lookup(res.Driver, res.Pool, res.Device, node)
		if d == nil {
			return false
		}
		if m, ok := d.memoryMiB(cl.MemoryCapacity, c.boundOf(cl.Family)); !ok || m == 0 {
			return false
		}
	}
	return true
}
