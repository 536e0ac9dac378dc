package quotacheck

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
)

// mebibyte is the bytes of one MiB.
const mebibyte = 1 << 20

// byteThreshold: a memory limit of 10^9 or more written without a binary
// suffix is read as bytes. A billion MiB (about an exabyte) is no limit
// anyone means; the API server writes "8000000000" and "8G" alike ("8G"),
// so the value decides, not the spelling.
var byteThreshold = resource.MustParse("1G")

// Reading is how one limits.<governed resource> value is enforced.
type Reading struct {
	// Value is the enforced limit: MiB for memory, else as written.
	Value int64
	// Invalid: the value is unusable; the limit blocks its dimension
	// (Value 0) until it is fixed.
	Invalid bool
	// Problem says why Value is not the value as written ("" when it is).
	Problem string
	// Written is the value as a user wrote it: a number that is not whole
	// in decimal ("1.5", never the API server's "1500m").
	Written string
}

// Read reads q, the value of a limit; memory says the limit is on a
// family's memory resource, whose unit is factor MiB (memoryFactor; 0 or
// 1: MiB). A memory limit written in bytes (a binary suffix, "24Gi", or a
// value of 10^9 or more) is bytes, rounded down to MiB; a value that is
// not a whole number is rounded down (never more than written); a negative
// value, or one whose MiB do not fit in 64 bits, blocks.
func Read(q resource.Quantity, memory bool, factor int64) Reading {
	factor = max(factor, 1)
	if !memory {
		factor = 1
	}
	r := Reading{Written: Written(q)}
	switch {
	case q.Sign() < 0:
		return Reading{Invalid: true, Written: r.Written, Problem: "must not be negative; the limit blocks until it is fixed"}
	case memory && Bytes(q):
		return readBytes(q, factor, r)
	}
	n := floor(q.AsDec(), factor)
	if !n.IsInt64() {
		return Reading{Invalid: true, Written: r.Written,
			Problem: fmt.Sprintf("%s does not fit in a 64-bit integer; the limit blocks until it is fixed", unitsOf(memory, factor))}
	}
	r.Value = n.Int64()
	if !whole(q) {
		r.Problem = fmt.Sprintf("not a whole number: enforced as %d%s (rounded down, never more than written); write a whole number",
			r.Value, mibOf(memory))
	}
	return r
}

// readBytes reads a memory limit written in bytes.
func readBytes(q resource.Quantity, factor int64, r Reading) Reading {
	b := floor(q.AsDec(), 1)
	hami := "HAMi reads the number of bytes as memory units (effectively no limit)"
	if b.IsInt64() && b.Int64() < math.MaxInt64/factor {
		hami = fmt.Sprintf("HAMi reads it as %d MiB (the number of bytes as memory units: effectively no limit)", b.Int64()*factor)
	}
	n := b.Quo(b, big.NewInt(mebibyte))
	if !n.IsInt64() {
		return Reading{Invalid: true, Written: r.Written, Problem: "MiB do not fit in a 64-bit integer; the limit blocks until it is fixed"}
	}
	r.Value = n.Int64()
	r.Problem = fmt.Sprintf("a memory limit in bytes: enforced as %d MiB (bytes rounded down to MiB); %s: write %q",
		r.Value, hami, strconv.FormatInt(r.Value/factor, 10))
	return r
}

// Bytes reports whether a memory limit q is read as bytes: written with a
// binary suffix (Ki, Mi, Gi, ...), or 10^9 or more. The suffix is that of
// q as the API server writes it (what a webhook decodes, what kubectl
// shows), not its in-memory format: a client's NewQuantity(1000,
// BinarySI) is written "1000".
func Bytes(q resource.Quantity) bool {
	return binary(q) || q.Cmp(byteThreshold) >= 0
}

// binary reports whether q is written with a binary suffix.
func binary(q resource.Quantity) bool {
	s := q.String()
	return len(s) > 2 && s[len(s)-1] == 'i' && strings.ContainsRune("KMGTPE", rune(s[len(s)-2]))
}

// Written is q as a user reads it: a whole number under 10^9 in digits
// ("8000", not the API server's "8k"), a larger one or one in binary units
// as the API server writes it ("8G", "24Gi"), any other in decimal ("1.5",
// not "1500m").
func Written(q resource.Quantity) string {
	if whole(q) {
		if v, ok := q.AsInt64(); ok && !binary(q) && q.Cmp(byteThreshold) < 0 {
			return strconv.FormatInt(v, 10)
		}
		return q.String()
	}
	return strconv.FormatFloat(q.AsApproximateFloat64(), 'f', -1, 64)
}

// whole reports whether q is a whole number.
func whole(q resource.Quantity) bool {
	d := q.AsDec()
	return new(inf.Dec).Round(d, 0, inf.RoundFloor).Cmp(d) == 0
}

// floor is d times factor, rounded down, as an integer.
func floor(d *inf.Dec, factor int64) *big.Int {
	p := new(inf.Dec).Mul(d, inf.NewDec(factor, 0))
	p.Round(p, 0, inf.RoundFloor)
	return new(big.Int).Set(p.UnscaledBig())
}

func unitsOf(memory bool, factor int64) string {
	if memory && factor > 1 {
		return fmt.Sprintf("times memoryFactor %d", factor)
	}
	return "the value"
}

func mibOf(memory bool) string {
	if memory {
		return " MiB"
	}
	return ""
}
