// Package admission holds gpuadmit's admission handlers for Pods: the
// mutating handler that records a GPU pod's effective demand in the
// gpuadmit.io/effective annotation (for people and tools to read; nothing
// trusts it), and the validating handler that hands a GPU pod's CREATE to
// the Reserver (pkg/admitqueue: the namespace's admission queue decides it
// with the shared decision function and, when allowed, writes its
// reservation in the namespace's GPUReservationSet before answering), so
// that a burst of concurrent creates on any replica cannot over-admit.
//
// The mutating handlers also write the requesting-user stamp (pkg/stamp)
// on pods (Mutator), on workloads' pod templates (WorkloadStamper) and on
// ResourceClaims (ClaimStamper), and the validating handlers charge the
// decision to the user the reviewed object's stamp verifies to
// (decision.Request.ChargedUser).
//
// The handlers are thin: decode -> gate -> Reserver -> response. They
// depend only on the small interfaces of admission.go, so tests run them
// with fakes and the server wires the real store and decision; they log
// with the request's logger (controller-runtime puts it in the context),
// every denial once at the default verbosity, and hand every denial (not
// of a dry run) to the Recorder, on a goroutine of its own, to become a
// Warning Event on the pod's owner or its namespace (events.go).
package admission
