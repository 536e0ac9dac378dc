package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestServerCPUForwardsAndMarks: the client's lines reach the output but
// its marks, which are recorded in order instead.
func TestServerCPUForwardsAndMarks(t *testing.T) {
	in := "/floor 10 reviews\n" + markPrefix + "floor\nx\n" + markPrefix + "validate\n" + markPrefix + "end\nratio\n"
	var out bytes.Buffer
	m := serverCPU(strings.NewReader(in), &out)
	if got, want := out.String(), "/floor 10 reviews\nx\nratio\n"; got != want {
		t.Errorf("forwarded %q, want %q", got, want)
	}
	if got := strings.Join(m.names, ","); got != "floor,validate,end" {
		t.Errorf("marks %q, want floor,validate,end", got)
	}
}

// TestPerReview divides each run's CPU by the reviews, and prints nothing
// without two marks or reviews.
func TestPerReview(t *testing.T) {
	tests := []struct {
		name string
		m    cpuMarks
		n    int
		want string
	}{
		{"two runs", cpuMarks{names: []string{"floor", "validate", "end"}, at: []time.Duration{0, time.Millisecond, 3 * time.Millisecond}}, 10,
			"CPU per review (who): floor 100.0 µs, validate 200.0 µs\n"},
		{"one mark", cpuMarks{names: []string{"floor"}, at: []time.Duration{0}}, 10, ""},
		{"no reviews", cpuMarks{names: []string{"floor", "end"}, at: []time.Duration{0, time.Second}}, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			tc.m.perReview(&out, "who", tc.n)
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
