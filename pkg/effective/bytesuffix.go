package effective

import (
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/api/resource"
)

// byteLike is the smallest memory value with a suffix that is read as
// bytes: 10^6 (as MiB about a TiB, beyond any device's memory; as bytes
// about a MiB). Below it a suffix is the API server's canonical form of a
// plain number ("3k" for 3000) or a shorthand for thousands of MiB ("16Ki"
// for 16384), which HAMi reads as that number like any other.
const byteLike = 1_000_000

// writtenAsBytes reports whether q is a memory quantity its author meant as
// bytes: a suffix or an exponent ("8Gi", "8000Mi", "8G", "8e9") with a value
// of at least byteLike. HAMi reads the value as a number of memory units
// whatever the suffix, so "8Gi" is 8589934592 MiB.
func writtenAsBytes(q resource.Quantity) bool {
	return strings.ContainsFunc(q.String(), unicode.IsLetter) && q.CmpInt64(byteLike) >= 0
}

// bytesReason is the FieldError reason for a memory quantity v (its value)
// written as bytes: how HAMi reads it and the figure to write, in the
// family's memory units.
func bytesReason(v int64, s Family) string {
	unit := "MiB"
	if f := s.Factor(); f > 1 {
		unit = fmt.Sprintf("units of %d MiB", f)
	}
	read := fmt.Sprintf("is %d %s as HAMi reads it (the number, whatever the suffix)", v, unit)
	if v < 1<<20 {
		return read + "; as bytes it is less than 1 MiB"
	}
	mib := ceilDiv(v, 1<<20)
	return fmt.Sprintf("%s; as bytes it is %d MiB: write %d", read, mib, ceilDiv(mib, s.Factor()))
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// readMem reads the family's memory resource (at most limit when limit > 0);
// a quantity written as bytes is an error giving the figure to write, unless
// the family reads a suffix as bytes (Family.ByteMemory).
func (r *resourceReader) readMem(s Family, limit int64) (int64, bool) {
	v, ok := r.read(s.Names.Memory, limit)
	if !ok || s.ByteMemory {
		return v, ok
	}
	if q, _, _ := lookupResource(r.c, s.Names.Memory); writtenAsBytes(q) {
		r.errs = append(r.errs, r.fail(s.Names.Memory, bytesReason(v, s)))
		return 0, false
	}
	return v, true
}
