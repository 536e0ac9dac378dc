package rego_test

import (
	"context"
	"testing"

	"github.com/gpuadmit/gpuadmit/policy"
)

// TestPolicies runs every *_test.rego of the embedded policies through OPA's
// tester, with the engine's capabilities, as `opa test rego/` does.
func TestPolicies(t *testing.T) {
	rep, err := policy.New(policy.Options{}).Test(context.Background(), policy.TestOptions{})
	if err != nil {
		t.Fatal(err)
	}
	results := rep.Results
	if len(results) < 15 {
		t.Errorf("ran %d Rego tests, want at least 15", len(results))
	}
	for _, r := range results {
		t.Run(r.Name, func(t *testing.T) {
			if r.Error != nil {
				t.Fatalf("%s:%d: %v", r.Location.File, r.Location.Row, r.Error)
			}
			if r.Fail {
				t.Fatalf("%s:%d: %s failed", r.Location.File, r.Location.Row, r.Name)
			}
		})
	}
}
