package eval

import (
	"context"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	effectivecmd "github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/effective"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// claim decides the CREATE of w's ResourceClaim in its namespace, as the
// webhook decides it, and records it in the ledger when admitted (the
// watch would record it) before the next object is decided.
func (e *Evaluation) claim(ctx context.Context, w *manifest.Workload) (evalObject, error) {
	o := evalObject{ObjectRef: effectivecmd.RefOf(w), evaluatedIn: e.namespaceOf(w.Namespace)}
	c := w.Claim.DeepCopy()
	// The API server creates a claim without status, under a UID of its own.
	c.Namespace, c.Status = o.evaluatedIn, resourcev1.ResourceClaimStatus{}
	c.UID = types.UID(fmt.Sprintf("gpuadmit-eval/ResourceClaim/%s/%s", c.Namespace, c.Name))
	res, err := e.decider.Decide(ctx, decision.Request{Claim: c, Namespace: c.Namespace, Operation: "CREATE", User: *e.User,
		Explain: e.explain, Reservations: e.reserved[c.Namespace], Teams: e.Source.Teams().For(e.ledger, c.Namespace)})
	if err != nil {
		return o, err
	}
	o.Allowed, o.Explanation, o.Denials, o.Warnings = res.Allowed, res.Explanation, res.Denials, res.Warnings
	o.Effective, o.Families = evalEffective(res.Effective, e.decider.Families()[0].Name)
	if !e.decider.GovernsClaim(c) {
		o.Warnings = append(o.Warnings, e.notGoverned(c))
	}
	if res.Allowed {
		o.Admitted = 1
		o.Denials = nil
		e.ledger.UpsertClaim(c)
	}
	if o.Denials == nil {
		o.Denials = []string{}
	}
	if o.Warnings == nil {
		o.Warnings = []string{}
	}
	return o, nil
}

// notGoverned says that a claim of no governed DeviceClass is neither
// decided nor charged.
func (e *Evaluation) notGoverned(c *resourcev1.ResourceClaim) string {
	var names []string
	for _, cl := range e.decider.Charger().Classes() {
		names = append(names, cl.Name)
	}
	governed := "the configuration governs none"
	if len(names) > 0 {
		governed = "the configuration governs " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("ResourceClaim %q asks for no device of a DeviceClass gpuadmit governs (%s): the webhook admits it without deciding, and it is not charged",
		c.Name, governed)
}
