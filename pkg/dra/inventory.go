package dra

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/lru"
)

// Inventory is the devices ResourceSlices publish (immutable once built;
// it remembers which devices each set of selectors picks). It is safe for
// concurrent use, and its methods are nil-safe: an empty or nil inventory
// knows no device.
//
// A node speaks only for itself: the devices of a node-local slice
// (spec.nodeName) are that node's and no other's, its pool's generations
// are compared among that node's slices only, and an allocation result is
// resolved against the devices of the node it was allocated on. A pool
// published node-locally by several nodes is a reported conflict: when it is
// named after one of them (the drivers' convention), only that node's slices
// count; otherwise each node's devices stay its own. Pools that are not
// node-local (a node selector, all nodes, per-device node selection) count
// only for the drivers trusted to publish them (NetworkPoolDrivers); a pool
// published both so and node-locally is a reported conflict, and the
// node-local copy is not used (a node cannot shadow a network device).
type Inventory struct {
	devices []device
	// index lists the devices of each (driver, pool, name), one per owner.
	index map[deviceID][]int
	// all and byDriver are the devices' indexes, in the inventory's order.
	all      []int
	byDriver map[string][]int
	problems []SliceProblem

	mu sync.Mutex
	// picks memoises, by driver and selector expressions, what the
	// selectors made of each device (claims of one class mostly share their
	// selectors); a bounded LRU cache of *pickMemo.
	picks *lru.Cache
}

// SliceProblem is a published device or pool the inventory does not use (or
// a conflict it resolved), reported instead of ignored.
type SliceProblem struct {
	// Slice is the ResourceSlice's name.
	Slice                      string
	Driver, Pool, Node, Device string
	Message                    string
}

// InventoryOption configures NewInventory.
type InventoryOption func(*inventoryConfig)

type inventoryConfig struct {
	// network is the drivers trusted with pools that are not node-local
	// (nil: every driver).
	network map[string]bool
}

// NetworkPoolDrivers makes the ResourceSlices that are not node-local
// (spec.nodeSelector, spec.allNodes, spec.perDeviceNodeSelection) count
// only for the drivers listed; the others are reported. A node's kubelet can only write slices of its own
// node name (the NodeRestriction admission), so such slices come from a
// cluster-wide identity. Without this option every driver is trusted with
// them; with an empty list, none is.
func NetworkPoolDrivers(drivers []string) InventoryOption {
	return func(c *inventoryConfig) {
		c.network = make(map[string]bool, len(drivers))
		for _, d := range drivers {
			c.network[d] = true
		}
	}
}

// deviceID names a device as an allocation result does.
type deviceID struct {
	driver, pool, name string
}

// device is one published device. Its maps are the slice's own: the
// slices handed to NewInventory must not be modified afterwards (informer
// objects never are).
type device struct {
	id deviceID
	// slice is the name of the ResourceSlice that published it.
	slice string
	// owner is the node whose node-local slice published the device; ""
	// for a pool that is not node-local.
	owner string
	// node is the node the device is bound to by name; "" when it is
	// reachable from more than one node (a node selector, all nodes).
	node       string
	allowMulti *bool
	attributes map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
	capacity   map[resourcev1.QualifiedName]resourcev1.DeviceCapacity
}

// poolKey names a pool as seen from its writer: driver, pool name and the
// node of a node-local pool ("" otherwise).
type poolKey struct {
	driver, pool, owner string
}

// NewInventory indexes the devices of list. As the scheduler does, only the
// slices of the newest generation of each pool count (compared per node for
// node-local pools); a device published twice by one writer is counted once.
// The result does not depend on the order of list.
func NewInventory(list []*resourcev1.ResourceSlice, opts ...InventoryOption) *Inventory {
	var cfg inventoryConfig
	for _, o := range opts {
		o(&cfg)
	}
	inv := &Inventory{index: map[deviceID][]int{}, byDriver: map[string][]int{}, picks: newPicks()}
	ss := inv.admitted(list, &cfg)
	latest := map[poolKey]int64{}
	for _, s := range ss {
		k := keyOf(s)
		if g, ok := latest[k]; !ok || s.Spec.Pool.Generation > g {
			latest[k] = s.Spec.Pool.Generation
		}
	}
	for _, s := range ss {
		if s.Spec.Pool.Generation < latest[keyOf(s)] {
			continue
		}
		for i := range s.Spec.Devices {
			inv.add(s, &s.Spec.Devices[i])
		}
	}
	sortProblems(inv.problems)
	return inv
}

// keyOf is the pool s belongs to.
func keyOf(s *resourcev1.ResourceSlice) poolKey {
	return poolKey{s.Spec.Driver, s.Spec.Pool.Name, nodeOf(s)}
}

// nodeOf is the node of a node-local slice, "" for any other.
func nodeOf(s *resourcev1.ResourceSlice) string {
	if s.Spec.NodeName != nil {
		return *s.Spec.NodeName
	}
	return ""
}

// admitted returns the slices of list that may speak for their pools,
// sorted, and records a problem for each that may not: a pool that is not
// node-local of an untrusted driver, and the slices of a node publishing a
// pool named after another node that publishes it too.
func (inv *Inventory) admitted(list []*resourcev1.ResourceSlice, cfg *inventoryConfig) []*resourcev1.ResourceSlice {
	owners := map[poolID]map[string]bool{}
	network := map[poolID]bool{}
	for _, s := range list {
		if s != nil && nodeOf(s) == "" && (cfg.network == nil || cfg.network[s.Spec.Driver]) {
			network[poolID{s.Spec.Driver, s.Spec.Pool.Name}] = true
		}
		if s != nil && nodeOf(s) != "" {
			p := poolID{s.Spec.Driver, s.Spec.Pool.Name}
			if owners[p] == nil {
				owners[p] = map[string]bool{}
			}
			owners[p][nodeOf(s)] = true
		}
	}
	ss := make([]*resourcev1.ResourceSlice, 0, len(list))
	for _, s := range list {
		if s == nil {
			continue
		}
		p := poolID{s.Spec.Driver, s.Spec.Pool.Name}
		if msg := inv.refused(s, cfg, owners[p], network[p]); msg != "" {
			inv.problems = append(inv.problems, SliceProblem{Slice: s.Name, Driver: s.Spec.Driver, Pool: s.Spec.Pool.Name,
				Node: nodeOf(s), Message: msg})
			continue
		}
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(a, b *resourcev1.ResourceSlice) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Spec.Driver, b.Spec.Driver),
			cmp.Compare(a.Spec.Pool.Name, b.Spec.Pool.Name), cmp.Compare(nodeOf(a), nodeOf(b)))
	})
	return ss
}

// poolID names a resource pool across writers.
type poolID struct {
	driver, pool string
}

// refused says why s may not speak for its pool ("" when it may); a pool
// node-locally published by several nodes is reported even when s counts.
// network: a trusted writer publishes the pool not node-locally, so a node
// publishing it too would shadow the network devices on that node.
func (inv *Inventory) refused(s *resourcev1.ResourceSlice, cfg *inventoryConfig, owners map[string]bool, network bool) string {
	node := nodeOf(s)
	switch {
	case node == "" && cfg.network != nil && !cfg.network[s.Spec.Driver]:
		return "the pool is not node-local and the driver is not trusted to publish such pools (dra.networkPoolDrivers): its devices are not used"
	case node == "":
		return ""
	case network:
		return "node " + node + " publishes pool " + s.Spec.Pool.Name + " node-locally, which is also published as a pool that is not node-local: its devices are not used"
	}
	if len(owners) < 2 {
		return ""
	}
	others := make([]string, 0, len(owners)-1)
	for n := range owners {
		if n != node {
			others = append(others, n)
		}
	}
	slices.Sort(others)
	pool := s.Spec.Pool.Name
	msg := "the pool is also published by node(s) " + strings.Join(others, ", ") + ": each node's devices count for that node only"
	switch {
	case pool == node:
		msg = "the pool is also published by node(s) " + strings.Join(others, ", ") + ", whose slices of it are not used"
	case owners[pool]:
		return "node " + node + " publishes pool " + pool + ", which node " + pool + " publishes as its own: its devices are not used"
	}
	inv.problems = append(inv.problems, SliceProblem{Slice: s.Name, Driver: s.Spec.Driver, Pool: pool, Node: node, Message: msg})
	return ""
}

// add records one device of s (the first of a name its writer repeats).
func (inv *Inventory) add(s *resourcev1.ResourceSlice, d *resourcev1.Device) {
	id := deviceID{s.Spec.Driver, s.Spec.Pool.Name, d.Name}
	owner := nodeOf(s)
	for _, i := range inv.index[id] {
		if inv.devices[i].owner == owner {
			return
		}
	}
	node := owner
	switch {
	case d.NodeName != nil:
		node = *d.NodeName
	case d.NodeSelector != nil || d.AllNodes != nil:
		node = ""
	}
	i := len(inv.devices)
	inv.index[id] = append(inv.index[id], i)
	inv.all = append(inv.all, i)
	inv.byDriver[id.driver] = append(inv.byDriver[id.driver], i)
	inv.devices = append(inv.devices, device{id: id, slice: s.Name, owner: owner, node: node, allowMulti: d.AllowMultipleAllocations,
		attributes: d.Attributes, capacity: d.Capacity})
}

// Len is the number of devices the inventory knows.
func (inv *Inventory) Len() int {
	if inv == nil {
		return 0
	}
	return len(inv.devices)
}

// Problems are the slices, pools and devices the inventory refused or
// found in conflict (a copy, sorted).
func (inv *Inventory) Problems() []SliceProblem {
	if inv == nil {
		return nil
	}
	return slices.Clone(inv.problems)
}

// lookup returns the device an allocation result names on node (the node
// the claim was allocated on, "" when the allocation names none): a device
// node published, or one of a pool that is not node-local; nil when none.
func (inv *Inventory) lookup(driver, pool, name, node string) *device {
	if inv == nil {
		return nil
	}
	var found *device
	for _, i := range inv.index[deviceID{driver, pool, name}] {
		d := &inv.devices[i]
		switch {
		case node != "" && d.owner == node:
			return d
		case d.owner == "":
			found = d
		}
	}
	return found
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

// sortProblems orders problems by slice, then by what they name.
func sortProblems(ps []SliceProblem) {
	slices.SortFunc(ps, func(a, b SliceProblem) int {
		return cmp.Or(cmp.Compare(a.Slice, b.Slice), cmp.Compare(a.Driver, b.Driver), cmp.Compare(a.Pool, b.Pool),
			cmp.Compare(a.Node, b.Node), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Message, b.Message))
	})
}
