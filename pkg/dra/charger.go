package dra

import (
	"errors"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Mode is how the devices of a class are sized.
type Mode string

// The modes of a Class.
const (
	// ModeCapacity: a device is shared; the request names its share in
	// capacity.requests (HAMi-DRA).
	ModeCapacity Mode = "Capacity"
	// ModeDevice: whole devices; a device's memory is what its
	// ResourceSlice publishes (NVIDIA's gpu.nvidia.com, mig.nvidia.com).
	ModeDevice Mode = "Device"
)

// Class says how the devices of one DeviceClass are charged.
type Class struct {
	// Name is the DeviceClass name.
	Name string
	// Family is the effective.Family (by Name) the devices are charged to.
	Family string
	Mode   Mode
	// Driver is the driver whose ResourceSlices publish the class's devices
	// (CEL selectors and sizes are evaluated against them); "" = any driver.
	Driver string
	// MemoryCapacity is the capacity name holding memory in bytes, in
	// capacity.requests and in slices' device capacity ("memory").
	MemoryCapacity string
	// CoresCapacity is the capacity name holding cores ("cores"); "" = none.
	CoresCapacity string
	// CoresPerDevice is, in ModeDevice, the cores charged per whole device
	// (100 for gpu.nvidia.com, 0 for MIG); ModeCapacity ignores it.
	CoresPerDevice int64
	// Selectors are the CEL expressions of the DeviceClass's own selectors
	// (spec.selectors), which a device must pass besides the request's
	// (mig.nvidia.com's type == "mig", where one driver publishes both
	// whole GPUs and MIG devices); nil: the driver alone.
	Selectors []string
}

// Charger turns claims into demand. It is safe for concurrent use.
type Charger struct {
	classes []Class
	byName  map[string]*Class
	fams    []effective.Family
	famIdx  map[string]int
	cel     *selectorCache
	// programs are the compiled Selectors of each class, by class name.
	programs map[string][]cel.CompilationResult
	// budget is the CEL cost one claim may spend (DefaultClaimCostBudget).
	budget uint64
	// bound is the plausibility bound of a family's device memory in MiB
	// (nil, or <= 0 for a family: DefaultMemoryBoundMiB).
	bound func(family string) int64
	// network is the inventory's option of the drivers trusted with pools
	// that are not node-local (nil: every driver).
	network InventoryOption
}

// ChargerOption configures NewCharger.
type ChargerOption func(*Charger)

// WithMemoryBound sets the plausibility bound, in MiB, of the memory a
// device of a family may publish (a result <= 0: DefaultMemoryBoundMiB).
func WithMemoryBound(bound func(family string) int64) ChargerOption {
	return func(c *Charger) { c.bound = bound }
}

// WithNetworkPoolDrivers makes the inventories the charger builds
// (Charger.NewInventory) trust only drivers with pools that are not
// node-local (see NetworkPoolDrivers).
func WithNetworkPoolDrivers(drivers []string) ChargerOption {
	return func(c *Charger) { c.network = NetworkPoolDrivers(drivers) }
}

// NewInventory indexes the devices of list (the package's NewInventory)
// with the charger's options; a nil charger builds it without.
func (c *Charger) NewInventory(list []*resourcev1.ResourceSlice) *Inventory {
	if c == nil || c.network == nil {
		return NewInventory(list)
	}
	return NewInventory(list, c.network)
}

// NewCharger returns a charger of classes, whose families are fams. It
// rejects an unknown or unnamed family, a class named twice or not at all,
// an unknown mode, a class without a memory capacity name and a negative
// CoresPerDevice.
func NewCharger(classes []Class, fams []effective.Family, opts ...ChargerOption) (*Charger, error) {
	c := &Charger{
		classes:  slices.Clone(classes),
		byName:   make(map[string]*Class, len(classes)),
		fams:     slices.Clone(fams),
		famIdx:   make(map[string]int, len(fams)),
		programs: make(map[string][]cel.CompilationResult, len(classes)),
		budget:   DefaultClaimCostBudget,
	}
	for _, o := range opts {
		o(c)
	}
	c.cel = newSelectorCache(celCacheSize, min(c.budget, uint64(resourcev1.CELSelectorExpressionMaxCost)))
	var errs []error
	for i := range c.fams {
		name := c.fams[i].Name
		if name == "" {
			errs = append(errs, fmt.Errorf("family %d: name must not be empty", i))
			continue
		}
		if j, dup := c.famIdx[name]; dup {
			errs = append(errs, fmt.Errorf("families %d and %d are both named %q", j, i, name))
			continue
		}
		c.famIdx[name] = i
	}
	for i := range c.classes {
		cl := &c.classes[i]
		cl.Selectors = slices.Clone(cl.Selectors)
		if err := c.validate(cl); err != nil {
			errs = append(errs, fmt.Errorf("device class %d (%q): %w", i, cl.Name, err))
			continue
		}
		if _, dup := c.byName[cl.Name]; dup {
			errs = append(errs, fmt.Errorf("device class %d: %q is listed twice", i, cl.Name))
			continue
		}
		c.byName[cl.Name] = cl
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dra: %w", err)
	}
	return c, nil
}

// validate checks one class against the charger's families.
func (c *Charger) validate(cl *Class) error {
	switch {
	case cl.Name == "":
		return errors.New("name must not be empty")
	case cl.Family == "":
		return errors.New("family must not be empty")
	case cl.Mode != ModeCapacity && cl.Mode != ModeDevice:
		return fmt.Errorf("mode must be %q or %q, got %q", ModeCapacity, ModeDevice, cl.Mode)
	case cl.MemoryCapacity == "":
		return errors.New("memoryCapacity must not be empty")
	case cl.CoresCapacity == cl.MemoryCapacity:
		return fmt.Errorf("coresCapacity and memoryCapacity are both %q", cl.MemoryCapacity)
	case cl.CoresPerDevice < 0:
		return fmt.Errorf("coresPerDevice must not be negative, got %d", cl.CoresPerDevice)
	}
	if _, ok := c.famIdx[cl.Family]; !ok {
		return fmt.Errorf("unknown family %q", cl.Family)
	}
	progs := make([]cel.CompilationResult, 0, len(cl.Selectors))
	for i, expr := range cl.Selectors {
		res := c.cel.compile(expr)
		if res.Error != nil {
			return fmt.Errorf("selectors[%d] %q: %w", i, expr, res.Error)
		}
		progs = append(progs, res)
	}
	c.programs[cl.Name] = progs
	return nil
}

// Classes returns the charger's classes (a copy), in the order given.
func (c *Charger) Classes() []Class {
	if c == nil {
		return nil
	}
	out := slices.Clone(c.classes)
	for i := range out {
		out[i].Selectors = slices.Clone(out[i].Selectors)
	}
	return out
}

// class returns the governed class named name, nil when none is.
func (c *Charger) class(name string) *Class {
	if c == nil {
		return nil
	}
	return c.byName[name]
}

// Governs reports whether spec asks for a device of a governed class (in
// exactly or any firstAvailable subrequest).
func (c *Charger) Governs(spec *resourcev1.ResourceClaimSpec) bool {
	if c == nil || spec == nil {
		return false
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil && c.class(r.Exactly.DeviceClassName) != nil {
			return true
		}
		for j := range r.FirstAvailable {
			if c.class(r.FirstAvailable[j].DeviceClassName) != nil {
				return true
			}
		}
	}
	return false
}
