package stamp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// UserAnnotation is the stamp's username.
	UserAnnotation = "gpuadmit.io/requested-by"
	// SignatureAnnotation is the stamp's signature: base64url (unpadded)
	// HMAC-SHA256 over "<namespace>\x00<username>".
	SignatureAnnotation = "gpuadmit.io/requested-by-signature"
)

// Annotations are the stamp's two annotations.
func Annotations() []string { return []string{UserAnnotation, SignatureAnnotation} }

// Creator is a workload kind's pod creator: the pods whose controller
// ownerReference is of Group and Kind are created by Username.
type Creator struct {
	Group, Kind string
	Username    string
}

// kcmPrefix is the prefix of kube-controller-manager's controllers'
// service accounts.
const kcmPrefix = "system:serviceaccount:kube-system:"

// kcmControllers are kube-controller-manager's controllers that create
// pods or copy pod templates (a Deployment's into a ReplicaSet, a CronJob's
// into a Job).
var kcmControllers = []string{"replicaset-controller", "deployment-controller", "job-controller",
	"cronjob-controller", "statefulset-controller", "daemon-set-controller", "replication-controller"}

// builtinCreators are the controllers of the kinds whose controllers
// create pods, by the pod's controller ownerReference.
var builtinCreators = []Creator{
	{Group: "apps", Kind: "ReplicaSet", Username: kcmPrefix + "replicaset-controller"},
	{Group: "batch", Kind: "Job", Username: kcmPrefix + "job-controller"},
	{Group: "apps", Kind: "StatefulSet", Username: kcmPrefix + "statefulset-controller"},
	{Group: "apps", Kind: "DaemonSet", Username: kcmPrefix + "daemon-set-controller"},
	{Group: "", Kind: "ReplicationController", Username: kcmPrefix + "replication-controller"},
}

// MinKeyBytes is the shortest key New accepts.
const MinKeyBytes = 32

// Stamper signs and verifies stamps with one key. It is immutable and safe
// for concurrent use.
type Stamper struct {
	key []byte
	// trusted are the usernames that keep a valid stamp already on what
	// they create.
	trusted map[string]bool
	// creators are the pod creators by "group/Kind" of a pod's controller.
	creators map[string]string
	// stamped are the kinds, by "group/Kind", whose pod templates the
	// mutating webhook stamps: a trusted creator keeps a valid stamp only
	// on what one of them controls.
	stamped map[string]bool
}

// stampedKinds are the built-in kinds whose pod templates the mutating
// webhook stamps (the configured kinds with a pod creator are added).
var stampedKinds = []string{"apps/Deployment", "apps/ReplicaSet", "apps/StatefulSet", "apps/DaemonSet",
	"batch/Job", "batch/CronJob", "/ReplicationController"}

// New returns a Stamper signing with key (at least MinKeyBytes). creators
// are the configured kinds' pod creators: each is trusted, and a pod whose
// controller is of its kind is charged to it without a valid stamp; a
// creator of a built-in kind replaces the built-in one.
func New(key []byte, creators []Creator) (*Stamper, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("the stamp key has %d bytes, fewer than %d", len(key), MinKeyBytes)
	}
	s := &Stamper{key: append([]byte(nil), key...), trusted: map[string]bool{"system:kube-controller-manager": true},
		creators: map[string]string{}, stamped: map[string]bool{}}
	for _, k := range stampedKinds {
		s.stamped[k] = true
	}
	for _, c := range kcmControllers {
		s.trusted[kcmPrefix+c] = true
	}
	for _, c := range append(append([]Creator(nil), builtinCreators...), creators...) {
		if c.Username == "" {
			return nil, fmt.Errorf("the pod creator of %s/%s has no username", c.Group, c.Kind)
		}
		s.trusted[c.Username] = true
		s.creators[c.Group+"/"+c.Kind] = c.Username
		s.stamped[c.Group+"/"+c.Kind] = true
	}
	return s, nil
}

// Sign is the signature of user's stamp on an object of namespace ns.
func (s *Stamper) Sign(ns, user string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(ns))
	mac.Write([]byte{0})
	mac.Write([]byte(user))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// Verify reports whether sig is the signature of user's stamp in
// namespace ns (in constant time).
func (s *Stamper) Verify(ns, user, sig string) bool {
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || user == "" {
		return false
	}
	want, _ := base64.RawURLEncoding.DecodeString(s.Sign(ns, user))
	return hmac.Equal(got, want)
}

// Verified returns the user of the stamp in annotations when its signature
// verifies for namespace ns.
func (s *Stamper) Verified(ns string, annotations map[string]string) (string, bool) {
	user, ok := annotations[UserAnnotation]
	if !ok || !s.Verify(ns, user, annotations[SignatureAnnotation]) {
		return "", false
	}
	return user, true
}

// Trusted reports whether username is a trusted pod creator: one that
// keeps a valid stamp already on what it creates. Only the exact username
// counts (groups never do).
func (s *Stamper) Trusted(username string) bool { return s.trusted[username] }

// StampedOwner reports whether owner (an object's controller
// ownerReference, nil: none) is of a kind whose pod templates the mutating
// webhook stamps: only what such an object controls was copied from a
// template gpuadmit stamped.
func (s *Stamper) StampedOwner(owner *metav1.OwnerReference) bool {
	if owner == nil {
		return false
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	return err == nil && s.stamped[gv.Group+"/"+owner.Kind]
}

// Choose returns the user to stamp on an object of namespace ns, created
// or changed by requester, controlled by owner (its controller
// ownerReference, nil: none), that carries annotations: the valid stamp
// already there when the requester is a trusted creator and owner is of a
// kind whose templates gpuadmit stamps (so the stamp was copied from a
// stamped template), else the requester.
func (s *Stamper) Choose(ns, requester string, owner *metav1.OwnerReference, annotations map[string]string) string {
	if s.Trusted(requester) && s.StampedOwner(owner) {
		if user, ok := s.Verified(ns, annotations); ok {
			return user
		}
	}
	return requester
}

// Stamp returns the two annotations stamping user on an object of
// namespace ns.
func (s *Stamper) Stamp(ns, user string) map[string]string {
	return map[string]string{UserAnnotation: user, SignatureAnnotation: s.Sign(ns, user)}
}

// ClaimCreator reports whether username is kube-controller-manager's
// claim controller (or kube-controller-manager's own identity), which
// creates a claim from a pod's ResourceClaimTemplate: such a claim whose
// controller is a Pod is charged to that pod's user.
func (s *Stamper) ClaimCreator(username string) bool {
	return username == kcmPrefix+"resourceclaim-controller" || username == "system:kube-controller-manager"
}

// ClaimUserOf returns who claim is charged to: the user of its stamp when
// the signature verifies for its namespace (the mutating webhook stamps
// who created it, or, for a claim the claim controller made from a pod's
// claim template, the pod's user); else, for a claim whose controller is a
// Pod, kube-controller-manager's resourceclaim-controller; else "" (a claim created before gpuadmit was
// installed: no user's).
func (s *Stamper) ClaimUserOf(claim *resourcev1.ResourceClaim) string {
	if user, ok := s.Verified(claim.Namespace, claim.Annotations); ok {
		return user
	}
	if ref := metav1.GetControllerOfNoCopy(claim); ref != nil && ref.Kind == "Pod" && ref.APIVersion == "v1" {
		return kcmPrefix + "resourceclaim-controller"
	}
	return ""
}

// UserOf returns who pod is charged to: the user of its stamp when the
// signature verifies for its namespace; else, when its controller
// ownerReference is of a kind whose pod creator is known, that creator;
// else its own service account (default when unnamed).
func (s *Stamper) UserOf(pod *corev1.Pod) string {
	if user, ok := s.Verified(pod.Namespace, pod.Annotations); ok {
		return user
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if creator, ok := s.creators[gv.Group+"/"+ref.Kind]; ok && err == nil {
			return creator
		}
		break // a pod has one controller
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return "system:serviceaccount:" + pod.Namespace + ":" + sa
}
