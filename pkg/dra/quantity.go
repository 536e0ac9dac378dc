package dra

import (
	"errors"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

const mib = 1 << 20

// quantityInt returns q as a non-negative whole int64 (effective's reading
// of a resource quantity) or says why it is not one.
func quantityInt(q resource.Quantity) (int64, error) {
	if v, ok := q.AsInt64(); ok {
		if v < 0 {
			return 0, errors.New("must not be negative")
		}
		return v, nil
	}
	return effective.ParseQuantity(q.String())
}

// ceilMiB converts bytes to MiB, rounding up: a byte over a MiB is a MiB more.
func ceilMiB(b int64) int64 {
	m := b / mib
	if b%mib != 0 {
		m++
	}
	return m
}

// ceilDiv is a/b rounded up for a >= 0, b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}
