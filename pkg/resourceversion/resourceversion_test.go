package resourceversion

import "testing"

func TestOrder(t *testing.T) {
	for _, tt := range []struct {
		a, b           string
		atLeast, newer bool
		maxOf, minOf   string
		validA, validB bool
	}{
		{"10", "9", true, true, "10", "9", true, true}, // numeric, not lexical
		{"9", "10", false, false, "10", "9", true, true},
		{"42", "42", true, false, "42", "42", true, true},
		{"", "5", false, false, "5", "5", false, true},   // unknown progress is behind everything
		{"0", "5", false, false, "5", "5", false, true},  // "0": an object without a version
		{"07", "5", false, false, "5", "5", false, true}, // not well formed
		{"x", "", false, false, "x", "x", false, false},
		{"18446744073709551616", "18446744073709551615", true, true, "18446744073709551616", "18446744073709551615", true, true}, // past uint64
	} {
		if got := AtLeast(tt.a, tt.b); got != tt.atLeast {
			t.Errorf("AtLeast(%q, %q) = %v", tt.a, tt.b, got)
		}
		if got := Newer(tt.a, tt.b); got != tt.newer {
			t.Errorf("Newer(%q, %q) = %v", tt.a, tt.b, got)
		}
		if got := Max(tt.a, tt.b); got != tt.maxOf {
			t.Errorf("Max(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.maxOf)
		}
		if got := Min(tt.a, tt.b); got != tt.minOf {
			t.Errorf("Min(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.minOf)
		}
		if Valid(tt.a) != tt.validA || Valid(tt.b) != tt.validB {
			t.Errorf("Valid(%q), Valid(%q) = %v, %v", tt.a, tt.b, Valid(tt.a), Valid(tt.b))
		}
	}
}
