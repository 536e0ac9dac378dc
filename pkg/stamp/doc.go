// Package stamp is the requesting-user stamp: who asked for a pod. The
// mutating webhook writes two annotations on bare pods, on workloads' pod
// templates and on ResourceClaims: gpuadmit.io/requested-by (the username)
// and gpuadmit.io/requested-by-signature (an HMAC-SHA256 of the namespace
// and the username under a key only gpuadmit reads, kept in the Secret
// gpuadmit-stamp-key of gpuadmit's namespace). A stamp is trusted only when
// its signature verifies for the object's namespace: a name written by
// hand, or a signature copied from another namespace, never does.
//
// Choose says which user the webhook writes: the requester, except that a
// trusted pod creator (kube-controller-manager's controllers and the
// configured workload kinds' pod creators) keeps a valid stamp already on
// an object whose controller ownerReference is of a kind whose templates
// the webhook stamps (the controller copied it from a stamped template);
// anything else it makes is stamped with the creator. ClaimCreator names
// the claim controller, whose claims made for a pod carry that pod's user
// (the caller reads the pod). UserOf
// says who a pod is charged to: its verified stamp, else its controller's
// service account (by its controller ownerReference's kind), else its own
// service account.
//
// It knows nothing of the project: the caller hands it the key (LoadKey
// reads or creates the Secret) and the pod creators.
package stamp
