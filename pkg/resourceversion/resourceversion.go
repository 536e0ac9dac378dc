// Package resourceversion compares Kubernetes resourceVersions, on
// apimachinery's CompareResourceVersion: the one place gpuadmit reads a
// resourceVersion as an order (the progress of a watch, the marks of
// reservations, the versions of an object). A resourceVersion that is not
// well formed (empty, "0", not a number) is never ordered after anything.
package resourceversion

import "k8s.io/apimachinery/pkg/util/resourceversion"

// Valid reports whether rv is a well-formed resourceVersion.
func Valid(rv string) bool {
	_, err := resourceversion.CompareResourceVersion(rv, rv)
	return err == nil
}

// AtLeast reports whether rv is at or past mark (false when either is not
// well formed).
func AtLeast(rv, mark string) bool {
	c, err := resourceversion.CompareResourceVersion(rv, mark)
	return err == nil && c >= 0
}

// Newer reports whether rv is past than (false when either is not well
// formed).
func Newer(rv, than string) bool {
	c, err := resourceversion.CompareResourceVersion(rv, than)
	return err == nil && c > 0
}

// Max returns the later of two resourceVersions (the valid one when only
// one is; a when neither is).
func Max(a, b string) string {
	if Newer(b, a) || (!Valid(a) && Valid(b)) {
		return b
	}
	return a
}

// Min returns the earlier of two well-formed resourceVersions (the valid
// one when only one is).
func Min(a, b string) string {
	if Newer(a, b) || (!Valid(a) && Valid(b)) {
		return b
	}
	return a
}
