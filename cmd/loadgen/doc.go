// Command loadgen measures the admission webhook over HTTPS on loopback: it
// starts a local control plane and the webhook server (internal/devcluster,
// the wiring of cmd/webhook), seeds the demo's namespace, then posts a
// bounded number of dry-run AdmissionReviews of a GPU pod concurrently to
// /validate-pods and, in the same run, to a floor handler that only decodes
// and encodes the review, and prints throughput, p50 and p99 of each and the
// ratio.
package main
