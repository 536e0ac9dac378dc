package source

import (
	"crypto/rand"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

// asWritten charges each pod and claim of the state to the user its
// requesting-user stamp names, as written: the command line has no key to
// verify a signature, so the stamps of a dump (or of the cluster) are
// trusted. Without a stamp, as the webhook: a pod's controller's pod
// creator (kube-controller-manager's controllers), else its own service
// account.
type asWritten struct{ fallback *stamp.Stamper }

// stateUsers is the ledger's Users for the command line (nil when no key
// can be made: every charge's user is then "").
func stateUsers() *asWritten {
	key := make([]byte, stamp.MinKeyBytes) // verifies nothing: only the fallbacks are used
	if _, err := rand.Read(key); err != nil {
		return nil
	}
	s, err := stamp.New(key, nil)
	if err != nil {
		return nil
	}
	return &asWritten{fallback: s}
}

func (a *asWritten) UserOf(p *corev1.Pod) string {
	if u := p.Annotations[stamp.UserAnnotation]; u != "" {
		return u
	}
	return a.fallback.UserOf(p)
}

func (a *asWritten) ClaimUserOf(c *resourcev1.ResourceClaim) string {
	if u := c.Annotations[stamp.UserAnnotation]; u != "" {
		return u
	}
	return a.fallback.ClaimUserOf(c)
}
