package effective

import (
	"math"
	"math/big"
)

// SatAdd is a + b for non-negative values, saturating at math.MaxInt64:
// sums of charges and limits a hostile value could overflow.
func SatAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// AddSat is v + o per dimension, saturating (SatAdd).
func (v Vector) AddSat(o Vector) Vector {
	return Vector{GPU: SatAdd(v.GPU, o.GPU), MemMiB: SatAdd(v.MemMiB, o.MemMiB), Cores: SatAdd(v.Cores, o.Cores)}
}

// Percent is floor(a * 100 / limit) for a non-negative a, saturating at
// math.MaxInt64; 0 for a limit of 0 or less.
func Percent(a, limit int64) int64 {
	switch {
	case limit <= 0:
		return 0
	case a <= math.MaxInt64/100:
		return a * 100 / limit
	}
	p := new(big.Int).Mul(big.NewInt(a), big.NewInt(100))
	if p.Quo(p, big.NewInt(limit)); !p.IsInt64() {
		return math.MaxInt64
	}
	return p.Int64()
}
