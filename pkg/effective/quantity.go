package effective

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FieldError is an invalid GPU request: which container, which resource,
// which value and why. It is what a deny message and the CLI show.
type FieldError struct {
	Container string
	Resource  string
	Value     string
	Reason    string
}

func (e *FieldError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("container %q: %s: %s", e.Container, e.Resource, e.Reason)
	}
	return fmt.Sprintf("container %q: %s %q: %s", e.Container, e.Resource, e.Value, e.Reason)
}

// InvalidError collects every FieldError of a pod.
type InvalidError struct {
	Errors []*FieldError
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return "invalid GPU request: " + strings.Join(msgs, "; ")
}

// Unwrap exposes the individual field errors to errors.Is/As.
func (e *InvalidError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe
	}
	return out
}

// ParseQuantity parses a quantity string the way container resources are read:
// it must be a valid Kubernetes quantity with a non-negative integer value
// that fits in int64.
func ParseQuantity(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("not a quantity: %w", err)
	}
	return quantityInt(q)
}

// quantityInt returns q as a non-negative int64 or explains why it is not one.
func quantityInt(q resource.Quantity) (int64, error) {
	if q.Sign() < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	v, ok := q.AsInt64()
	if ok {
		return v, nil
	}
	// AsInt64 fails for fractions and for values beyond int64; tell them apart.
	if q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.DecimalSI)) > 0 {
		return 0, fmt.Errorf("does not fit in a 64-bit integer")
	}
	return 0, fmt.Errorf("must be a whole number")
}

// mulInt64 multiplies two non-negative int64 values, reporting overflow.
func mulInt64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if a > math.MaxInt64/b {
		return 0, false
	}
	return a * b, true
}

// addInt64 adds two non-negative int64 values, reporting overflow.
func addInt64(a, b int64) (int64, bool) {
	if a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}
