package workload

import (
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	for _, tt := range []struct {
		in, err string
		steps   int
	}{
		{in: "spec.template", steps: 2},
		{in: "spec.replicatedJobs[*].template.spec.template", steps: 6},
		{in: "spec.a[*][*].b", steps: 5},
		{in: "spec.a[*]", steps: 3},
		{in: "", err: "empty path"},
		{in: "spec..template", err: "empty field name"},
		{in: ".spec", err: "empty field name"},
		{in: "spec.", err: "ends with '.'"},
		{in: "spec.a[*].", err: "ends with '.'"},
		{in: "[*].a", err: "must follow a field name"},
		{in: "spec.a[0].b", err: "only [*]"},
		{in: "spec.a[*]b", err: "followed by '.'"},
	} {
		p, err := ParsePath(tt.in)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParsePath(%q) = %v, want an error with %q", tt.in, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("ParsePath(%q): %v", tt.in, err)
		case tt.err == "" && len(p.steps) != tt.steps:
			t.Errorf("ParsePath(%q) has %d steps, want %d", tt.in, len(p.steps), tt.steps)
		case tt.err == "" && p.String() != tt.in:
			t.Errorf("ParsePath(%q).String() = %q", tt.in, p.String())
		}
	}
}

// TestAlignedWith: a count's [*] must iterate the template's own list, so
// that it is read at the template's index, never another list's.
func TestAlignedWith(t *testing.T) {
	tmpl := MustPath("spec.jobs[*].template")
	for _, tt := range []struct {
		p  string
		ok bool
	}{
		{"spec.jobs[*].replicas", true},
		{"spec.replicas", true},
		{"spec.other[*].replicas", false},
		{"spec.jobs[*].x[*].n", false},
	} {
		if err := MustPath(tt.p).alignedWith(tmpl); (err == nil) != tt.ok {
			t.Errorf("%q aligned with %q: %v, want ok=%v", tt.p, tmpl, err, tt.ok)
		}
	}
}
