package decision

import "github.com/gpuadmit/gpuadmit/pkg/effective"

// sumUsage adds usages per family, saturating instead of overflowing.
func sumUsage(us ...effective.Usage) effective.Usage {
	out := effective.Usage{}
	for _, u := range us {
		for f, v := range u {
			out[f] = sum(out[f], v)
		}
	}
	return out
}

// nonNegative is u with every negative dimension raised to zero.
func nonNegative(u effective.Usage) effective.Usage {
	zero := make(effective.Usage, len(u))
	for f := range u {
		zero[f] = effective.Vector{}
	}
	return u.Max(zero)
}

// sum adds vectors, saturating at math.MaxInt64 instead of overflowing.
func sum(vs ...effective.Vector) effective.Vector {
	var out effective.Vector
	for _, v := range vs {
		out = out.AddSat(v)
	}
	return out
}
