package effective_test

import (
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// FuzzParseQuantity: any string either parses to a non-negative integer that
// equals the quantity's exact value, or is an error; it never panics.
func FuzzParseQuantity(f *testing.F) {
	for _, s := range []string{"0", "1", "20480", "2k", "1Gi", "1500m", "0.5", "-1", "1e3", "100E", "9223372036854775807",
		"9223372036854775808", "", "abc", "1.", "+5", "5Ki", "1e-3", " 7", "0x10", "1E18", "8E", "1.0", "100e-2", "16.0Gi", "1000000000000000000", "-0", "  5 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := effective.ParseQuantity(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("ParseQuantity(%q) = %d < 0", s, v)
		}
		q := resource.MustParse(strings.TrimSpace(s))
		if want := resource.NewQuantity(v, resource.DecimalSI); q.Cmp(*want) != 0 {
			t.Fatalf("ParseQuantity(%q) = %d, but the quantity is %s", s, v, q.String())
		}
		if _, err := strconv.ParseInt(strconv.FormatInt(v, 10), 10, 64); err != nil {
			t.Fatal(err)
		}
	})
}
