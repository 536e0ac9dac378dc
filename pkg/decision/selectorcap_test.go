package decision

import (
	"context"
	"fmt"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/feed"
)

// paddedClaim is a 1 GiB HAMi-DRA claim with pads selectors of 10 KiB that
// select every device.
func paddedClaim(name string, pads int) *resourcev1.ResourceClaim {
	c := testclaim.HAMiDRA("team-a", name, 1, 1024, 0)
	pad := `"` + strings.Repeat("p", resourcev1.CELSelectorExpressionMaxLength-8) + `" != ""`
	for range pads {
		c.Spec.Devices.Requests[0].Exactly.Selectors = append(c.Spec.Devices.Requests[0].Exactly.Selectors,
			resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: pad}})
	}
	return c
}

// TestSelectorsOverCapDenied: a governed claim whose selectors count more
// than dra.MaxClaimSelectorBytes is denied at its CREATE, with the reason,
// charging and reserving nothing; so is a pod naming a template over it,
// whether the ledger holds the template whole or as its feed keeps it
// (the feed keeps a marker instead of such selectors: were the claim read
// without them, it could be charged less than its selectors pick). Under
// the cap, both are decided as any.
func TestSelectorsOverCapDenied(t *testing.T) {
	const reason = "more than the 65536 gpuadmit accepts"
	d, l := claimDecider(t, loadedEngine(t), nil)
	slimTemplate := feed.TemplateTransform(d.Charger())
	for _, tt := range []struct {
		pads    int
		allowed bool
	}{{pads: 6, allowed: true}, {pads: 7}, {pads: resourcev1.DeviceSelectorsMaxSize}} {
		c := paddedClaim("c", tt.pads)
		whole := testclaim.Template("team-a", fmt.Sprintf("whole-%d", tt.pads), c)
		l.UpsertTemplate(whole)
		kept, err := slimTemplate(testclaim.Template("team-a", fmt.Sprintf("slim-%d", tt.pads), c))
		if err != nil {
			t.Fatal(err)
		}
		l.UpsertTemplate(kept.(*resourcev1.ResourceClaimTemplate))
		for _, req := range []Request{{Claim: c}, {Pod: testclaim.TemplatePod("team-a", "p", whole.Name)},
			{Pod: testclaim.TemplatePod("team-a", "p", kept.(*resourcev1.ResourceClaimTemplate).Name)}} {
			what := fmt.Sprintf("%d padding selectors (%d bytes), claim %v", tt.pads, d.Charger().SelectorBytes(&c.Spec), req.Claim != nil)
			res, err := d.Decide(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			denials := strings.Join(res.Denials, "\n")
			if res.Allowed != tt.allowed || strings.Contains(denials, reason) == tt.allowed {
				t.Errorf("%s: allowed %v, denials %q", what, res.Allowed, denials)
			}
			if !tt.allowed && (!res.Effective.IsZero() || !res.Reserve.IsZero()) {
				t.Errorf("%s: denied, charging %s and reserving %s", what, res.Effective, res.Reserve)
			}
		}
	}
	if n := d.Charger().SelectorBytes(&paddedClaim("c", 7).Spec); n <= dra.MaxClaimSelectorBytes {
		t.Fatalf("7 padding selectors count %d bytes, not over the cap", n)
	}
}
