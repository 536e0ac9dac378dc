package ledger

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
)

func template(ns, name string, memMiB int64) *resourcev1.ResourceClaimTemplate {
	return testclaim.Template(ns, name, hamiClaim(ns, "", "", 1, memMiB))
}

func templatePod(ns, name, uid, tmpl string) *corev1.Pod {
	p := testclaim.TemplatePod(ns, name, tmpl)
	p.UID, p.ResourceVersion = types.UID(uid), "3"
	return p
}

func generatedClaim(pod *corev1.Pod, name, uid string, memMiB int64) *resourcev1.ResourceClaim {
	return testclaim.GeneratedFor(hamiClaim(pod.Namespace, name, uid, 1, memMiB), pod, "gpu")
}

// TestTemplateChargesOnlyItsClaim attacks issue 42's template-after-pod
// hole: whatever order the pod, its template, the pod's updates and the
// generated claim arrive in, the ledger charges the claim once it exists
// (decided at its own CREATE) and nothing under the pod, never a template
// no decision saw.
func TestTemplateChargesOnlyItsClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(l *Ledger, pod *corev1.Pod, claim *resourcev1.ResourceClaim)
		used  int64
	}{
		{"pod recorded, no claim yet", func(l *Ledger, p *corev1.Pod, _ *resourcev1.ResourceClaim) { l.UpsertPod(p) }, 0},
		{"template created after the pod, pod touched", func(l *Ledger, p *corev1.Pod, _ *resourcev1.ResourceClaim) {
			l.DeleteTemplate("ns", "gpu-10g")
			l.UpsertPod(p)
			l.UpsertTemplate(template("ns", "gpu-10g", 30720))
			touched := p.DeepCopy()
			touched.ResourceVersion = "4"
			touched.Labels = map[string]string{"touched": "yes"}
			l.UpsertPod(touched)
		}, 0},
		{"pod then claim", func(l *Ledger, p *corev1.Pod, c *resourcev1.ResourceClaim) { l.UpsertPod(p); l.UpsertClaim(c) }, 10240},
		{"claim then pod", func(l *Ledger, p *corev1.Pod, c *resourcev1.ResourceClaim) { l.UpsertClaim(c); l.UpsertPod(p) }, 10240},
		{"pod updated after the claim", func(l *Ledger, p *corev1.Pod, c *resourcev1.ResourceClaim) {
			l.UpsertPod(p)
			l.UpsertClaim(c)
			l.UpsertPod(p)
		}, 10240},
		{"pod deleted, claim stays", func(l *Ledger, p *corev1.Pod, c *resourcev1.ResourceClaim) {
			l.UpsertPod(p)
			l.UpsertClaim(c)
			l.DeletePod(p)
		}, 10240},
		{"claim deleted", func(l *Ledger, p *corev1.Pod, c *resourcev1.ResourceClaim) {
			l.UpsertPod(p)
			l.UpsertClaim(c)
			l.DeleteClaim(c.Namespace, c.Name)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newClaimLedger(t)
			l.UpsertTemplate(template("ns", "gpu-10g", 10240))
			pod := templatePod("ns", "p", "pod-1", "gpu-10g")
			claim := generatedClaim(pod, "p-gpu-abcde", "claim-1", 10240)
			tc.steps(l, pod, claim)
			s := l.Namespace("ns", nil)
			if got := s.Used.Of(nvidia).MemMiB; got != tc.used {
				t.Fatalf("used %d MiB, want %d", got, tc.used)
			}
			for _, ch := range l.Charges("ns") {
				if ch.Kind == ChargeClaim && ch.Name != claim.Name {
					t.Fatalf("charged %+v: only the claim itself may be", ch)
				}
			}
		})
	}
}

// TestForgedGeneratedClaims: claims carrying the pod-claim-name annotation
// and a controller owner reference to the pod are charged each, as any
// claim (the annotation and the owner name nothing that is charged
// already), and a second one for the same pod claim is not folded into
// the first.
func TestForgedGeneratedClaims(t *testing.T) {
	l := newClaimLedger(t)
	l.UpsertTemplate(template("ns", "gpu-10g", 10240))
	pod := templatePod("ns", "p", "pod-1", "gpu-10g")
	l.UpsertPod(pod)
	for i, uid := range []string{"g", "f1", "f2"} {
		l.UpsertClaim(generatedClaim(pod, "claim-"+uid, uid, 10240))
		if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != int64(i+1)*10240 {
			t.Fatalf("after %d claims for the same pod claim: used %d MiB, want %d", i+1, got, int64(i+1)*10240)
		}
	}
	l.DeletePod(pod)
	if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != 3*10240 {
		t.Fatalf("the pod's deletion lowered its claims' charge: %d MiB", got)
	}
}
