package burn

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// HoursToAmount converts resource-hours (a budget's spec.hard value, which
// may be a decimal: "0.5", "1500m") to an Amount, rounding down to the
// millisecond so that a limit is never raised; a value too large for an
// Amount saturates at math.MaxInt64. A negative value is refused.
func HoursToAmount(q resource.Quantity) (Amount, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("%s: a budget of resource-hours cannot be negative", q.String())
	}
	d := q.AsDec() // unscaled × 10^-scale
	switch digits, scale := len(d.UnscaledBig().String()), int(d.Scale()); {
	case d.UnscaledBig().Sign() == 0 || scale > digits+7: // below a millisecond
		return 0, nil
	case -scale+digits > 20: // at least 10^19 hours
		return math.MaxInt64, nil
	}
	ms := new(big.Int).Mul(d.UnscaledBig(), big.NewInt(MillisPerHour))
	if scale := int64(d.Scale()); scale > 0 {
		ms.Quo(ms, new(big.Int).Exp(big.NewInt(10), big.NewInt(scale), nil)) // rounds toward zero
	} else if scale < 0 {
		ms.Mul(ms, new(big.Int).Exp(big.NewInt(10), big.NewInt(-scale), nil))
	}
	u := ms
	if !u.IsInt64() {
		return math.MaxInt64, nil
	}
	return Amount(u.Int64()), nil
}

// AmountToHours renders an Amount in resource-hours, truncated (toward
// zero) to at most two decimal places without trailing zeros: "2",
// "0.5", "1.25". Truncating keeps a use just under its limit from reading
// as the limit.
func AmountToHours(a Amount) string {
	sign := ""
	v := int64(a)
	if v < 0 {
		sign = "-"
		if v == math.MinInt64 {
			v = math.MaxInt64
		} else {
			v = -v
		}
	}
	hundredths := v / (MillisPerHour / 100)
	whole, frac := hundredths/100, hundredths%100
	if frac == 0 {
		if whole == 0 {
			sign = ""
		}
		return fmt.Sprintf("%s%d", sign, whole)
	}
	return sign + strings.TrimRight(fmt.Sprintf("%d.%02d", whole, frac), "0")
}

// AmountToQuantity renders an Amount in resource-hours as a Quantity with
// milli-hour precision (3.6 s), truncated toward zero: the status's
// hard, used and burn rate. A negative Amount renders as 0.
func AmountToQuantity(a Amount) resource.Quantity {
	return *resource.NewMilliQuantity(int64(max(a, 0))/(MillisPerHour/1000), resource.DecimalSI)
}
