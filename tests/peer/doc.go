// Package peer compares gpuadmit's admission decision with Gatekeeper's
// engine on the same namespace GPU memory quota, side by side.
//
// Gatekeeper's side is the constraint framework Gatekeeper is built on
// (github.com/open-policy-agent/frameworks/constraint, its Rego driver):
// a ConstraintTemplate whose Rego, in the style of Gatekeeper's
// referential policies, sums the nvidia.com/gpumem limits of the pods
// synced into data.inventory.namespace[ns]["v1"]["Pod"] (the client's
// AddData, as Gatekeeper's sync does), adds the reviewed pod's and
// denies when the sum exceeds the constraint's limitMiB parameter. The
// target handler is a small stand-in for Gatekeeper's
// admission.k8s.gatekeeper.sh target (Gatekeeper's own is not a library):
// same inventory paths, an AdmissionRequest as the review, a kind match.
//
// gpuadmit's side is pkg/decision's Decider with the embedded policies and
// a usage ledger holding the same pods, a ResourceQuota with
// limits.nvidia.com/gpumem set to the same limit, and the namespace.
//
// TestSameVerdicts checks that both give the same verdict (and report the
// same usage) on a few hundred random namespaces. BenchmarkGatekeeper and
// BenchmarkGpuadmit time one review of a pod that fits, with 100, 1000 and
// 10000 pods in the reviewed namespace (and 1000 in other namespaces);
// syncing the pods is outside the timed loop. Neither side decodes an
// AdmissionReview: Gatekeeper gets the AdmissionRequest with the pod's
// JSON, as its webhook hands it to the client, gpuadmit the decoded pod.
//
// It is a module of its own so that the main module does not depend on
// the constraint framework. Run it from the repository root with
// `make bench-peer` (the test and the benchmarks with -benchmem) or
// `make peer-1x` (the test and each benchmark once), or here with
//
//	go test -run TestSameVerdicts -bench . -benchmem -count=1 ./...
package peer
