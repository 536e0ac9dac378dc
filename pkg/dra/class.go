package dra

import (
	"context"
	"fmt"
	"slices"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
)

// UngovernedClass reports a DeviceClass outside the governed classes whose
// selectors can select a device of a governed class's driver: a claim of
// that class would hold governed devices uncharged. It returns nil for a
// governed class, or one whose selectors reject every published device of
// a governed driver. A class without selectors selects every device; a
// selector that does not compile, fails at run time, or is not evaluated
// within the charger's per-claim CEL budget or ctx counts as selecting (the
// worst case). A class whose selectors select no published device of a
// governed driver today may do so once more are published: check again
// when the ResourceSlices change.
func (c *Charger) UngovernedClass(ctx context.Context, dc *resourcev1.DeviceClass, inv *Inventory) error {
	if c == nil || dc == nil || c.class(dc.Name) != nil || len(c.classes) == 0 {
		return nil
	}
	drivers := c.drivers()
	programs, bad := c.classPrograms(dc)
	if bad != "" {
		return fmt.Errorf("DeviceClass %s is not governed and its selector %s: it may select the devices of %s, which claims of it would hold uncharged",
			dc.Name, bad, driverList(drivers))
	}
	if len(programs) == 0 {
		return fmt.Errorf("DeviceClass %s is not governed and has no selectors: it selects every device, %s's included, which claims of it would hold uncharged",
			dc.Name, driverList(drivers))
	}
	if inv.Len() == 0 {
		return nil
	}
	if ctx == nil {
		ctx = context.Background() // a nil context must not panic in CEL
	}
	e := &evaluation{ctx: ctx, left: c.budget, limit: c.cel.limit}
	for _, driver := range drivers {
		devs := inv.pick(e, driver, programs)
		if len(devs) == 0 {
			continue
		}
		what := "selects"
		if e.left == 0 || ctx.Err() != nil {
			what = "selects (or could not be evaluated within the CEL budget or deadline on)"
		}
		d := devs[0]
		return fmt.Errorf("DeviceClass %s is not governed and %s device %s/%s/%s of governed driver %s: claims of it would hold governed devices uncharged",
			dc.Name, what, d.id.driver, d.id.pool, d.id.name, d.id.driver)
	}
	return nil
}

// drivers are the governed classes' drivers, sorted ("" alone: a class of
// any driver governs every device).
func (c *Charger) drivers() []string {
	var out []string
	for i := range c.classes {
		if c.classes[i].Driver == "" {
			return []string{""}
		}
		out = append(out, c.classes[i].Driver)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// classPrograms compiles dc's CEL selectors; bad names the first that does
// not compile ("" when all do).
func (c *Charger) classPrograms(dc *resourcev1.DeviceClass) ([]cel.CompilationResult, string) {
	var out []cel.CompilationResult
	for i := range dc.Spec.Selectors {
		s := dc.Spec.Selectors[i].CEL
		if s == nil {
			continue // no selector of a kind this version knows: it narrows nothing
		}
		res := c.cel.compile(s.Expression)
		if res.Error != nil {
			return nil, fmt.Sprintf("selectors[%d] does not compile (%v)", i, res.Error)
		}
		out = append(out, res)
	}
	return out, ""
}

// driverList names drivers for a message.
func driverList(drivers []string) string {
	if len(drivers) == 1 && drivers[0] == "" {
		return "every driver"
	}
	return fmt.Sprint(drivers)
}
