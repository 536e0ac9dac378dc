package dra_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

func TestDemandsInvalid(t *testing.T) {
	bad := func(mutate func(r *resourcev1.DeviceRequest)) *resourcev1.ResourceClaimSpec {
		r := hamiRequest(1, 1024, 10)
		mutate(&r)
		return spec(r)
	}
	cases := []struct {
		name     string
		spec     *resourcev1.ResourceClaimSpec
		resource string
		value    string
		reason   string
	}{
		{"bad CEL", spec(exact("gpu", gpuClass, 1, `device.attributes[`)), "selectors[0]", `device.attributes[`, "does not compile"},
		{"CEL not a bool", spec(exact("gpu", gpuClass, 1, `"yes"`)), "selectors[0]", `"yes"`, "does not compile"},
		{"negative memory", bad(func(r *resourcev1.DeviceRequest) {
			r.Exactly.Capacity.Requests["memory"] = resource.MustParse("-1Gi")
		}), "memory", "-1Gi", "must not be negative"},
		{"fractional cores", bad(func(r *resourcev1.DeviceRequest) {
			r.Exactly.Capacity.Requests["cores"] = resource.MustParse("1500m")
		}), "cores", "1500m", "whole number"},
		{"huge memory", bad(func(r *resourcev1.DeviceRequest) {
			r.Exactly.Capacity.Requests["memory"] = resource.MustParse("100E")
		}), "memory", "100E", "64-bit"},
		{"cores over a device", bad(func(r *resourcev1.DeviceRequest) {
			r.Exactly.Capacity.Requests["cores"] = resource.MustParse("150")
		}), "cores", "150", "within 0..100"},
		{"negative count", bad(func(r *resourcev1.DeviceRequest) { r.Exactly.Count = -2 }), hamiClass, "-2", "count must be within"},
		{"absurd count", bad(func(r *resourcev1.DeviceRequest) { r.Exactly.Count = 1 << 40 }), hamiClass, "1099511627776", "count must be within"},
		{"unknown mode", bad(func(r *resourcev1.DeviceRequest) { r.Exactly.AllocationMode = "Some" }), hamiClass, "Some", "unknown allocationMode"},
		{"All without slices", spec(all("gpu", gpuClass)), gpuClass, "All", "worst case is unknown"},
		{"exactly and firstAvailable", bad(func(r *resourcev1.DeviceRequest) {
			r.FirstAvailable = []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: gpuClass}}
		}), hamiClass, "", "both exactly and firstAvailable"},
		{"name twice", spec(hamiRequest(1, 1, 1), hamiRequest(1, 1, 1)), "name", "gpu", "used twice"},
	}
	c := newCharger(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds, err := c.Demands(context.Background(), "claim", tc.spec, nil, nil, nil)
			var inv *effective.InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("Demands = %v, %v; want an *effective.InvalidError", ds, err)
			}
			if len(inv.Errors) != 1 {
				t.Fatalf("errors = %v, want one", inv.Errors)
			}
			fe := inv.Errors[0]
			if fe.Container != "claim/gpu" || fe.Resource != tc.resource || fe.Value != tc.value || !strings.Contains(fe.Reason, tc.reason) {
				t.Errorf("error = %+v, want claim/gpu, %s, %q, reason with %q", *fe, tc.resource, tc.value, tc.reason)
			}
		})
	}
}

// TestDemandsInvalidListsEveryRequest: each offending request is named.
func TestDemandsInvalidListsEveryRequest(t *testing.T) {
	a := hamiRequest(1, 1, 1)
	a.Name = "a"
	a.Exactly.Capacity.Requests["memory"] = resource.MustParse("-1")
	b := exact("b", gpuClass, 1, `nope(`)
	fa := resourcev1.DeviceRequest{Name: "c", FirstAvailable: []resourcev1.DeviceSubRequest{
		{Name: "x", DeviceClassName: gpuClass, AllocationMode: resourcev1.DeviceAllocationModeAll},
	}}
	ok := hamiRequest(1, 1, 1)
	_, err := newCharger(t).Demands(context.Background(), "claim", spec(a, ok, b, fa), nil, nil, nil)
	var inv *effective.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v", err)
	}
	var got []string
	for _, fe := range inv.Errors {
		got = append(got, fe.Container)
	}
	if want := "claim/a claim/b claim/c/x"; strings.Join(got, " ") != want {
		t.Errorf("containers = %v, want %s", got, want)
	}
	if msg := err.Error(); !strings.Contains(msg, "nope(") || !strings.Contains(msg, "claim/b") {
		t.Errorf("message %q names neither the request nor the expression", msg)
	}
}
