// Package admission holds gpuadmit's admission handlers for Pods: the
// mutating handler that records a GPU pod's effective demand in the
// gpuadmit.io/effective annotation, and the validating handler that
// recomputes the demand, asks the shared decision function (ledger snapshot +
// policy) and, for an allowed non-dry-run CREATE, reserves the demand in the
// usage ledger so that a burst of concurrent creates cannot over-admit.
//
// The handlers are thin: decode -> demand -> decision -> response
// (+ reservation). They depend only on the small interfaces below, so tests
// run them with fakes and the server wires the real ledger and policy engine.
package admission
