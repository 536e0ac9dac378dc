package effective

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Usage is a demand or a usage per device family: the family's name to its
// count, memory (MiB) and cores. A family whose vector is zero is absent, so
// two usages are equal when they hold the same families with the same
// vectors. A Usage is a value: the methods never modify their receiver.
type Usage map[string]Vector

// Of returns the vector of family (zero when absent).
func (u Usage) Of(family string) Vector { return u[family] }

// IsZero reports whether no family has a non-zero vector.
func (u Usage) IsZero() bool {
	for _, v := range u {
		if !v.IsZero() {
			return false
		}
	}
	return true
}

// Families returns the names of the families u holds, sorted.
func (u Usage) Families() []string { return slices.Sorted(maps.Keys(u)) }

// Add returns u + o, or false when a dimension overflows.
func (u Usage) Add(o Usage) (Usage, bool) {
	out := make(Usage, max(len(u), len(o)))
	ok := true
	for f, v := range u {
		out.set(f, v)
	}
	for f, v := range o {
		sum, fine := out[f].Add(v)
		ok = ok && fine
		out.set(f, sum)
	}
	return out.orNil(), ok
}

// Sub returns u - o per family (callers keep results non-negative).
func (u Usage) Sub(o Usage) Usage {
	out := u.Clone()
	for f, v := range o {
		if out == nil {
			out = Usage{}
		}
		out.set(f, out[f].Sub(v))
	}
	return out.orNil()
}

// Max returns the per-family, per-dimension maximum of u and o.
func (u Usage) Max(o Usage) Usage {
	out := u.Clone()
	for f, v := range o {
		if out == nil {
			out = Usage{}
		}
		out.set(f, out[f].Max(v))
	}
	return out.orNil()
}

// orNil returns nil for an empty usage: an empty usage is always nil, so
// that it reads the same whatever produced it.
func (u Usage) orNil() Usage {
	if len(u) == 0 {
		return nil
	}
	return u
}

// Clone returns a copy of u (nil for an empty u).
func (u Usage) Clone() Usage {
	if len(u) == 0 {
		return nil
	}
	return maps.Clone(u)
}

// Equal reports whether u and o hold the same non-zero vectors.
func (u Usage) Equal(o Usage) bool {
	for f, v := range u {
		if o[f] != v {
			return false
		}
	}
	for f, v := range o {
		if u[f] != v {
			return false
		}
	}
	return true
}

// set stores v for family f, dropping zero vectors.
func (u Usage) set(f string, v Vector) {
	if v.IsZero() {
		delete(u, f)
		return
	}
	u[f] = v
}

// String renders the usage for logs, families sorted.
func (u Usage) String() string {
	if u.IsZero() {
		return "none"
	}
	parts := make([]string, 0, len(u))
	for _, f := range u.Families() {
		parts = append(parts, fmt.Sprintf("%s: %s", f, u[f]))
	}
	return strings.Join(parts, "; ")
}

// UsageOf returns a usage holding v for family f (nil when v is zero).
func UsageOf(f string, v Vector) Usage {
	if v.IsZero() {
		return nil
	}
	return Usage{f: v}
}
