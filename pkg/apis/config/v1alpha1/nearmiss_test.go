package v1alpha1

import "testing"

// TestEdits: the optimal string alignment distance, cut at maxEdits + 1.
func TestEdits(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"memoryFactor", "memoryFactor", 0},
		{"memoryFactr", "memoryFactor", 1},   // a letter dropped
		{"memoryFactorr", "memoryFactor", 1}, // added
		{"memoryfactor", "memoryFactor", 1},  // changed (case)
		{"memroyFactor", "memoryFactor", 1},  // two adjacent swapped
		{"memryFactr", "memoryFactor", 2},
		{"mmeoryFacotr", "memoryFactor", 2},
		{"memFactor", "memoryFactor", 3}, // three dropped: far
		{"deviceSplitCount", "memoryFactor", 3},
		{"", "ab", 2},
		{"aiCPU", "aiCore", 3},
	} {
		if got := edits(tt.a, tt.b); got != tt.want {
			t.Errorf("edits(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	if got, ok := Nearest("resourceVCountNam", []string{"resourceCountName", "resourceVCountName"}); !ok || got != "resourceVCountName" {
		t.Errorf("Nearest = %q, %v: want the nearest, not the first within two", got, ok)
	}
	if _, ok := Nearest("memoryFactor", []string{"memoryFactor"}); ok {
		t.Error("a key is not a misspelling of itself")
	}
}
