package effective

import corev1 "k8s.io/api/core/v1"

// Dimension is one of a Vector's three dimensions: the count of devices,
// memory (MiB), cores (percent of a device). A family names one resource
// per dimension (ResourceNames; cores may have none).
type Dimension int

// The dimensions, in the order quotas, messages and metrics list them.
const (
	DimensionCount Dimension = iota
	DimensionMemory
	DimensionCores
)

// Dimensions lists the dimensions in order.
func Dimensions() [3]Dimension { return [3]Dimension{DimensionCount, DimensionMemory, DimensionCores} }

// String is "count", "memory" or "cores".
func (d Dimension) String() string {
	switch d {
	case DimensionCount:
		return "count"
	case DimensionMemory:
		return "memory"
	case DimensionCores:
		return "cores"
	}
	return "unknown"
}

// Get is v's value in dimension d.
func (v Vector) Get(d Dimension) int64 {
	switch d {
	case DimensionCount:
		return v.GPU
	case DimensionMemory:
		return v.MemMiB
	case DimensionCores:
		return v.Cores
	}
	return 0
}

// Of is the family's resource of dimension d ("" when it has none).
func (n ResourceNames) Of(d Dimension) corev1.ResourceName {
	switch d {
	case DimensionCount:
		return n.Count
	case DimensionMemory:
		return n.Memory
	case DimensionCores:
		return n.Cores
	}
	return ""
}
