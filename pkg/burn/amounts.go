package burn

import (
	"math"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Key names what a budget limits: one dimension (count, memory, cores) of
// one device family.
type Key struct {
	Family    string
	Dimension effective.Dimension
}

// Amounts are burns per family and dimension. A zero amount may be absent.
type Amounts map[Key]Amount

// Add adds o into a (allocating a when nil) and returns it; sums saturate
// at math.MaxInt64 and negative amounts count as zero, so a hostile value
// can neither wrap a sum nor lower it.
func (a Amounts) Add(o Amounts) Amounts {
	for k, v := range o {
		if v <= 0 {
			continue
		}
		if a == nil {
			a = Amounts{}
		}
		a[k] = a[k].Plus(v)
	}
	return a
}

// Of is the amount of k (zero when absent).
func (a Amounts) Of(k Key) Amount { return a[k] }

// Plus is x + y for non-negative amounts, saturating at math.MaxInt64; a
// negative operand counts as zero.
func (x Amount) Plus(y Amount) Amount {
	return Amount(effective.SatAdd(int64(max(x, 0)), int64(max(y, 0))))
}

// times is value × milliseconds, saturating; zero for a non-positive operand.
func times(value int64, ms int64) Amount {
	if value <= 0 || ms <= 0 {
		return 0
	}
	if value > math.MaxInt64/ms {
		return math.MaxInt64
	}
	return Amount(value * ms)
}

// millisBetween is the number of milliseconds from a to b on the Unix
// millisecond grid (floor of each), so that adjacent intervals add up
// exactly; zero when b is not after a.
func millisBetween(a, b time.Time) int64 {
	d := b.UnixMilli() - a.UnixMilli()
	return max(d, 0)
}

// usageAmounts is the burn of charge held for ms milliseconds.
func usageAmounts(out Amounts, charge effective.Usage, ms int64) Amounts {
	if ms <= 0 {
		return out
	}
	for fam, v := range charge {
		for _, d := range effective.Dimensions() {
			if amt := times(v.Get(d), ms); amt > 0 {
				if out == nil {
					out = Amounts{}
				}
				k := Key{Family: fam, Dimension: d}
				out[k] = out[k].Plus(amt)
			}
		}
	}
	return out
}
