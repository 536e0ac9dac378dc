package dra

import (
	"fmt"
	"strconv"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
)

// A claim's selectors are bounded: the CEL selectors of its requests and
// subrequests of governed classes may total at most MaxClaimSelectorBytes
// (each counts SelectorOverhead besides its expression). An honest claim's
// are a few hundred bytes (HAMi-DRA writes one per device type); the API
// server accepts 32 requests of up to 8 subrequests, each with 32 selectors
// of 10 KiB, which the ledger could not hold for every claim and template.
// A claim over the cap is invalid (Demands says so): the validating webhook
// denies it, and a pod naming a template over it, at their admission. The
// ledger's feed keeps of such a claim, instead of its selectors, one
// OverCapSelectors marker that carries the claim's count, so that the
// charger reads the slimmed claim as it read the whole one: invalid, with
// the same reason, never charged as a claim whose selectors were dropped
// (all the class's devices eligible), which may be less than what the
// selectors would pick (none sized: the family's largest device).

const (
	// MaxClaimSelectorBytes bounds SelectorBytes of a governed claim or
	// template.
	MaxClaimSelectorBytes = 64 << 10
	// SelectorOverhead is what one selector counts besides its expression.
	SelectorOverhead = 64
	// overCapPrefix starts the expression of the OverCapSelectors marker;
	// the rest is the whole claim's SelectorBytes. It is no CEL (the API
	// server compiles every selector of a claim), and counts at least its
	// own length, so a claim cannot use it to hide selectors.
	overCapPrefix = "@gpuadmit: selectors over the cap, bytes="
)

// SelectorBytes is what the CEL selectors of spec's requests and
// subrequests of governed classes count against MaxClaimSelectorBytes: per
// selector SelectorOverhead plus its expression's length (a marker of
// OverCapSelectors the count it carries, when higher).
func (c *Charger) SelectorBytes(spec *resourcev1.ResourceClaimSpec) int {
	if c == nil || spec == nil {
		return 0
	}
	n := 0
	add := func(class string, sel []resourcev1.DeviceSelector) {
		if c.class(class) == nil {
			return
		}
		for i := range sel {
			n += selectorBytes(&sel[i])
		}
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			add(r.Exactly.DeviceClassName, r.Exactly.Selectors)
		}
		for j := range r.FirstAvailable {
			add(r.FirstAvailable[j].DeviceClassName, r.FirstAvailable[j].Selectors)
		}
	}
	return n
}

// selectorBytes is what one selector counts.
func selectorBytes(s *resourcev1.DeviceSelector) int {
	if s.CEL == nil {
		return SelectorOverhead
	}
	n := SelectorOverhead + len(s.CEL.Expression)
	if rest, ok := strings.CutPrefix(s.CEL.Expression, overCapPrefix); ok {
		if carried, err := strconv.Atoi(rest); err == nil && carried > n {
			return carried
		}
	}
	return n
}

// OverCapSelectors is what a slimmed claim keeps instead of the selectors
// of a claim whose SelectorBytes is n, over MaxClaimSelectorBytes: one
// selector that SelectorBytes counts n.
func OverCapSelectors(n int) []resourcev1.DeviceSelector {
	return []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: overCapPrefix + strconv.Itoa(n)}}}
}

// checkSelectorCap records spec as invalid when its selectors count more
// than MaxClaimSelectorBytes, against its first request of a governed
// class; false then.
func (b *builder) checkSelectorCap(spec *resourcev1.ResourceClaimSpec) bool {
	n := b.c.SelectorBytes(spec)
	if n <= MaxClaimSelectorBytes {
		return true
	}
	request := ""
	for i := range spec.Devices.Requests {
		if r := &spec.Devices.Requests[i]; len(b.asks(r)) > 0 {
			request = r.Name
			break
		}
	}
	b.fail(request, "selectors", strconv.Itoa(n), fmt.Sprintf("the CEL selectors of the claim's requests of governed DeviceClasses "+
		"count %d bytes (%d per selector besides its expression), more than the %d gpuadmit accepts (an honest claim's are a "+
		"few hundred); narrow the request with fewer, shorter selectors", n, SelectorOverhead, MaxClaimSelectorBytes))
	return false
}
