package dra

import (
	"context"

	"k8s.io/dynamic-resource-allocation/cel"
)

// matches reports whether every compiled selector accepts d, as the
// scheduler evaluates them; a selector that fails at run time on d (a
// missing attribute, a cost limit) does not rule it out: the worst case.
func matches(programs []cel.CompilationResult, d *device) bool {
	in := cel.Device{Driver: d.id.driver, AllowMultipleAllocations: d.allowMulti, Attributes: d.attributes, Capacity: d.capacity}
	for i := range programs {
		ok, _, err := programs[i].DeviceMatches(context.Background(), in)
		if err == nil && !ok {
			return false
		}
	}
	return true
}
