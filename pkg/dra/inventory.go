package dra

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/dynamic-resource-allocation/cel"
)

// Inventory is the devices ResourceSlices publish (immutable once built;
// it remembers which devices each set of selectors picks). It is safe for
// concurrent use, and its methods are nil-safe: an empty or nil inventory
// knows no device.
type Inventory struct {
	devices []device
	index   map[deviceID]int

	mu sync.Mutex
	// picks memoises the eligible devices by driver and selector
	// expressions (claims of one class mostly share their selectors).
	picks map[string][]*device
}

// maxPicks bounds the memo: claims may each carry selectors of their own
// (HAMi-DRA writes one per annotated device UUID).
const maxPicks = 1024

// deviceID names a device as an allocation result does.
type deviceID struct {
	driver, pool, name string
}

// device is one published device. Its maps are the slice's own: the
// slices handed to NewInventory must not be modified afterwards (informer
// objects never are).
type device struct {
	id deviceID
	// node is the node the device is bound to by name; "" when it is
	// reachable from more than one node (a node selector, all nodes).
	node       string
	allowMulti *bool
	attributes map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
	capacity   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity
}

// poolID names a resource pool.
type poolID struct {
	driver, pool string
}

// NewInventory indexes the devices of list. As the scheduler does, only the
// slices of the newest generation of each pool count; a device published
// twice is counted once. The result does not depend on the order of list.
func NewInventory(list []*resourcev1.ResourceSlice) *Inventory {
	ss := make([]*resourcev1.ResourceSlice, 0, len(list))
	latest := map[poolID]int64{}
	for _, s := range list {
		if s == nil {
			continue
		}
		ss = append(ss, s)
		p := poolID{s.Spec.Driver, s.Spec.Pool.Name}
		if g, ok := latest[p]; !ok || s.Spec.Pool.Generation > g {
			latest[p] = s.Spec.Pool.Generation
		}
	}
	slices.SortFunc(ss, func(a, b *resourcev1.ResourceSlice) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Spec.Driver, b.Spec.Driver), cmp.Compare(a.Spec.Pool.Name, b.Spec.Pool.Name))
	})
	inv := &Inventory{index: map[deviceID]int{}, picks: map[string][]*device{}}
	for _, s := range ss {
		if s.Spec.Pool.Generation < latest[poolID{s.Spec.Driver, s.Spec.Pool.Name}] {
			continue
		}
		for i := range s.Spec.Devices {
			inv.add(s, &s.Spec.Devices[i])
		}
	}
	return inv
}

// add records one device of s (the first of a duplicated name).
func (inv *Inventory) add(s *resourcev1.ResourceSlice, d *resourcev1.Device) {
	id := deviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
	if _, dup := inv.index[id]; dup {
		return
	}
	node := ""
	switch {
	case d.NodeName != nil:
		node = *d.NodeName
	case d.NodeSelector == nil && d.AllNodes == nil && s.Spec.NodeName != nil:
		node = *s.Spec.NodeName
	}
	inv.index[id] = len(inv.devices)
	inv.devices = append(inv.devices, device{id: id, node: node, allowMulti: d.AllowMultipleAllocations,
		attributes: d.Attributes, capacity: d.Capacity})
}

// Len is the number of devices the inventory knows.
func (inv *Inventory) Len() int {
	if inv == nil {
		return 0
	}
	return len(inv.devices)
}

// pick returns the devices of driver ("" any) that programs all accept,
// memoised by the programs' expressions.
func (inv *Inventory) pick(driver string, programs []cel.CompilationResult) []*device {
	if inv.Len() == 0 {
		return nil
	}
	var key strings.Builder
	key.WriteString(driver)
	for i := range programs {
		key.WriteByte(0)
		key.WriteString(programs[i].Expression)
	}
	inv.mu.Lock()
	devs, ok := inv.picks[key.String()]
	inv.mu.Unlock()
	if ok {
		return devs
	}
	for i := range inv.devices {
		d := &inv.devices[i]
		if (driver == "" || d.id.driver == driver) && matches(programs, d) {
			devs = append(devs, d)
		}
	}
	inv.mu.Lock()
	if len(inv.picks) < maxPicks {
		inv.picks[key.String()] = devs
	}
	inv.mu.Unlock()
	return devs
}

// lookup returns the device an allocation result names, nil when unknown.
func (inv *Inventory) lookup(driver, pool, name string) *device {
	if inv == nil {
		return nil
	}
	i, ok := inv.index[deviceID{driver, pool, name}]
	if !ok {
		return nil
	}
	return &inv.devices[i]
}

// capacityValue returns the device's capacity named name (plain, or
// qualified with the device's driver, as the scheduler reads it).
func (d *device) capacityValue(name string) (resource.Quantity, bool) {
	if c, ok := d.capacity[resourcev1.QualifiedName(name)]; ok {
		return c.Value, true
	}
	c, ok := d.capacity[resourcev1.QualifiedName(d.id.driver+"/"+name)]
	return c.Value, ok
}

// memoryMiB is the device's memory capacity in MiB (bytes rounded up);
// false when it publishes none or an invalid one.
func (d *device) memoryMiB(name string) (int64, bool) {
	q, ok := d.capacityValue(name)
	if !ok {
		return 0, false
	}
	b, err := quantityInt(q)
	if err != nil {
		return 0, false
	}
	return ceilMiB(b), true
}

// largestMiB is the largest memory among devs (false when none publishes one).
func largestMiB(devs []*device, capName string) (int64, bool) {
	var best int64
	known := false
	for _, d := range devs {
		if m, ok := d.memoryMiB(capName); ok {
			best, known = max(best, m), true
		}
	}
	return best, known
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
