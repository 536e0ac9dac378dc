package effective

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// FieldError is an invalid GPU request: which container, which resource,
// which value and why. It is what a deny message and the CLI show.
type FieldError struct {
	Container string
	Resource  string
	// Source is "limits" or "requests": where the value was read.
	Source string
	// Value is the quantity as the API server prints it.
	Value  string
	Reason string
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

// AsWritten replaces the values of the field errors with the values as the
// user wrote them, where written knows them (the API server stores the
// canonical form: "1.5" becomes "1500m").
func (e *InvalidError) AsWritten(written func(container, source, resource string) (string, bool)) {
	if written == nil {
		return
	}
	for _, fe := range e.Errors {
		if v, ok := written(fe.Container, fe.Source, fe.Resource); ok {
			fe.Value = v
		}
	}
}

// Unwrap exposes the individual field errors to errors.Is/As.
func (e *InvalidError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe
	}
	return out
}

// ParseQuantity parses a quantity string the way the API server reads a
// container resource (surrounding blanks are ignored, as in the API server's
// JSON decoding): it must be a valid Kubernetes quantity whose value is a
// non-negative whole number that fits in int64. "1.0", "100e-2" and "1E" are
// whole numbers; "1500m" is not.
func ParseQuantity(s string) (int64, error) {
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("not a quantity: %w", err)
	}
	return quantityInt(q)
}

// quantityInt returns q as a non-negative int64 or explains why it is not
// one. Whole numbers are decided by value, not by the quantity's internal
// scale: the API server canonicalises "1.0" to "1" before a webhook sees it,
// and the command line must agree with the webhook.
func quantityInt(q resource.Quantity) (int64, error) {
	if q.Sign() < 0 {
		return 0, errors.New("must not be negative")
	}
	if v, ok := q.AsInt64(); ok {
		return v, nil
	}
	d := q.AsDec() // exact: unscaled x 10^-scale
	n := new(big.Int).Set(d.UnscaledBig())
	if scale := int64(d.Scale()); scale > 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(scale), nil)
		var rem big.Int
		if n.QuoRem(n, p, &rem); rem.Sign() != 0 {
			return 0, errors.New("must be a whole number")
		}
	} else if scale < 0 {
		n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(-scale), nil))
	}
	if !n.IsInt64() {
		return 0, errors.New("does not fit in a 64-bit integer")
	}
	return n.Int64(), nil
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
