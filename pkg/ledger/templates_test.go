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

// TestTemplateClaimChargedOnce: a pod's template's claim is charged under
// the pod until the generated claim is recorded, then under the claim, in
// whatever order the two watches deliver them; never twice, never zero
// while the claim or the live pod stands for it.
func TestTemplateClaimChargedOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(l *Ledger, pod *corev1.Pod, claim *resourcev1.ResourceClaim)
		used  int64
	}{
		{"pod recorded, no claim yet", func(l *Ledger, p *corev1.Pod, _ *resourcev1.ResourceClaim) { l.UpsertPod(p) }, 10240},
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
		{"pod deleted before its claim was made", func(l *Ledger, p *corev1.Pod, _ *resourcev1.ResourceClaim) { l.UpsertPod(p); l.DeletePod(p) }, 0},
		{"pod succeeded before its claim was made", func(l *Ledger, p *corev1.Pod, _ *resourcev1.ResourceClaim) {
			l.UpsertPod(p)
			done := p.DeepCopy()
			done.Status.Phase = corev1.PodSucceeded
			l.UpsertPod(done)
		}, 0},
		{"template deleted after the pod: its part stays", func(l *Ledger, p *corev1.Pod, _ *resourcev1.ResourceClaim) {
			l.UpsertPod(p)
			l.DeleteTemplate("ns", "gpu-10g")
			l.UpsertPod(p)
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
			if got := l.Namespace("ns", nil).Used.Of(nvidia).MemMiB; got != tc.used {
				t.Fatalf("used %d MiB, want %d", got, tc.used)
			}
		})
	}
}

// TestClaimCovered: only a claim generated for a recorded pod's template,
// no larger than what the pod charges for it, is covered.
func TestClaimCovered(t *testing.T) {
	l := newClaimLedger(t)
	l.UpsertTemplate(template("ns", "gpu-10g", 10240))
	pod := templatePod("ns", "p", "pod-1", "gpu-10g")
	l.UpsertPod(pod)
	fits := generatedClaim(pod, "c", "u1", 10240)
	ds := nv(1, 10240, 0)
	if !l.ClaimCovered(fits, ds) {
		t.Fatal("the pod's own claim is not covered")
	}
	if l.ClaimCovered(fits, nv(1, 10241, 0)) {
		t.Fatal("a larger claim is covered")
	}
	other := hamiClaim("ns", "x", "u2", 1, 10240)
	if l.ClaimCovered(other, ds) {
		t.Fatal("a claim without an owner is covered")
	}
	elsewhere := generatedClaim(pod, "c", "u3", 10240)
	elsewhere.Namespace = "other"
	if l.ClaimCovered(elsewhere, ds) {
		t.Fatal("a claim in another namespace is covered")
	}
	l.UpsertClaim(fits)
	if l.ClaimCovered(generatedClaim(pod, "again", "u4", 10240), ds) {
		t.Fatal("a second claim for the same pod claim is covered")
	}
}
