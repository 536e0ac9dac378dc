package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// gaps are the reads of the cluster the user was refused ("list nodes"):
// what the webhook reads and a local decision would go without.
type gaps struct {
	mu    sync.Mutex
	reads []string
}

func (g *gaps) add(reads ...string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, r := range reads {
		if !slices.Contains(g.reads, r) {
			g.reads = append(g.reads, r)
		}
	}
}

// Forbidden names the reads of the cluster the user was refused, in the
// order they were made: what a local decision would go without.
func (l live) Forbidden() []string {
	if l.gaps == nil {
		return nil
	}
	l.gaps.mu.Lock()
	defer l.gaps.mu.Unlock()
	return slices.Clone(l.gaps.reads)
}

// Verdict is the API server's answer to a server-side dry run of a create
// (dryRun=All: admission runs, gpuadmit's webhooks included, and nothing
// is stored, reserved or recorded).
type Verdict struct {
	// Allowed: the create would succeed.
	Allowed bool
	// ByGpuadmit: a denial is gpuadmit's validating webhook's; false for
	// a refusal by another admission step (another webhook, the quota,
	// Pod Security, the object's validation).
	ByGpuadmit bool
	// Denials are the webhook's message, or the API server's refusal.
	Denials []string
	// Warnings are the warnings of the answer (the webhook's among them).
	Warnings []string
	// Effective is the pod's gpuadmit.io/effective annotation as the
	// mutating webhook wrote it ("" when it wrote none).
	Effective string
}

// effectiveAnnotation is the mutating webhook's annotation of a pod's
// effective demand (pkg/admission.EffectiveAnnotation).
const effectiveAnnotation = "gpuadmit.io/effective"

// webhookDenial is how the API server words a validating webhook's denial.
var webhookDenial = regexp.MustCompile(`admission webhook "([^"]+)" denied the request: `)

// DryRunPod asks the API server to create pod with dryRun=All, as the user
// of the kubeconfig (impersonated with --as), under a generated name, and
// returns its verdict. An error when the user may not create pods there,
// or when no verdict came back (the webhook not ready, a timeout).
func (l live) DryRunPod(ctx context.Context, pod *corev1.Pod) (Verdict, error) {
	p := &corev1.Pod{ObjectMeta: dryRunMeta(pod.ObjectMeta), Spec: *pod.Spec.DeepCopy()}
	var v Verdict
	kc, err := l.warningClient(&v)
	if err != nil {
		return v, err
	}
	created, err := kc.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err == nil {
		v.Allowed, v.Effective = true, created.Annotations[effectiveAnnotation]
		return v, nil
	}
	return v, refusal(&v, "pods", p.Namespace, err)
}

// DryRunClaim is DryRunPod for a ResourceClaim.
func (l live) DryRunClaim(ctx context.Context, claim *resourcev1.ResourceClaim) (Verdict, error) {
	c := &resourcev1.ResourceClaim{ObjectMeta: dryRunMeta(claim.ObjectMeta), Spec: *claim.Spec.DeepCopy()}
	var v Verdict
	kc, err := l.warningClient(&v)
	if err != nil {
		return v, err
	}
	if _, err = kc.ResourceV1().ResourceClaims(c.Namespace).Create(ctx, c, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err == nil {
		v.Allowed = true
		return v, nil
	}
	return v, refusal(&v, "resourceclaims", c.Namespace, err)
}

// dryRunMeta is the metadata a dry run creates: the manifest's namespace,
// labels and annotations, under a name generated from its own (a pod of
// that name may exist). The manifest's own gpuadmit.io/effective (a pod
// copied from `kubectl get -o yaml`) is dropped: the mutating webhook
// leaves one it does not rewrite (a pod it does not govern, a demand it
// refuses), and the verdict must show only what the webhook wrote.
func dryRunMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	annotations := maps.Clone(m.Annotations)
	delete(annotations, effectiveAnnotation)
	out := metav1.ObjectMeta{Namespace: m.Namespace, Labels: m.Labels, Annotations: annotations, GenerateName: m.GenerateName,
		OwnerReferences: m.OwnerReferences}
	if m.Name != "" {
		out.GenerateName = m.Name + "-"
	}
	if out.GenerateName == "" {
		out.GenerateName = "gpuadmit-eval-"
	}
	return out
}

// warningClient is the kubeconfig's client, whose answers' warnings are
// added to v.
func (l live) warningClient(v *Verdict) (kubernetes.Interface, error) {
	cfg, err := l.config()
	if err != nil {
		return nil, err
	}
	cfg.WarningHandler = warnings{v}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return kc, nil
}

// warnings adds each warning of an answer to a verdict.
type warnings struct{ v *Verdict }

func (w warnings) HandleWarningHeader(code int, _, text string) {
	if code == 299 && text != "" {
		w.v.Warnings = append(w.v.Warnings, text)
	}
}

// refusal sets v from the API server's refusal of a dry-run create of
// resource in ns: a webhook's or another admission step's denial, or the
// object's validation; an error when the user may not create resource in
// ns at all, or when the refusal is no verdict (an internal error: the
// webhook not ready, a timeout).
func refusal(v *Verdict, resource, ns string, err error) error {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return fmt.Errorf("server dry run of the create: %w", err)
	}
	msg := status.Status().Message
	m := webhookDenial.FindStringSubmatchIndex(msg)
	switch {
	case m != nil:
		name := msg[m[2]:m[3]]
		v.ByGpuadmit = name == "validate.gpuadmit.io" || name == "validate-resourceclaims.gpuadmit.io" || name == "validate-workloads.gpuadmit.io"
		v.Denials = []string{msg[m[1]:]}
		if !v.ByGpuadmit {
			v.Denials = []string{"refused by the admission webhook " + name + " (not gpuadmit's): " + msg[m[1]:]}
		}
		return nil
	case apierrors.IsForbidden(err) && strings.Contains(msg, `cannot create resource "`+resource+`"`):
		return &DryRunForbiddenError{Resource: resource, Namespace: ns, Err: err}
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		v.Denials = []string{"refused by the API server (not gpuadmit): " + msg}
		return nil
	}
	return fmt.Errorf("server dry run of the create gave no verdict: %w", err)
}

// DryRunForbiddenError says the user may not create Resource in Namespace, so
// not dry-run it either.
type DryRunForbiddenError struct {
	Resource, Namespace string
	Err                 error
}

func (e *DryRunForbiddenError) Error() string {
	return fmt.Sprintf("a server dry run needs create on %s in namespace %s: %v", e.Resource, e.Namespace, e.Err)
}

func (e *DryRunForbiddenError) Unwrap() error { return e.Err }
