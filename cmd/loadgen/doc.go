// Command loadgen measures the admission webhook over HTTPS on loopback: it
// starts a local control plane and the webhook server (internal/cluster/local,
// the wiring of cmd/webhook), seeds the demo's namespace, then posts a
// bounded number of dry-run AdmissionReviews of a GPU pod concurrently to
// /validate-pods and, in the same run, to a floor handler that only decodes
// and encodes the review, and prints throughput, p50 and p99 of each and the
// ratio. With --client-cpu the client is a second process pinned to that CPU
// (taskset), and `make bench-https` runs the server pinned to the others, so
// that the client does not take the server's cores.
package main
