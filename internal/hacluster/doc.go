// Package hacluster runs gpuadmit as several webhook processes (cmd/webhook
// built from this checkout, each with --kubeconfig and --cert-dir) on a
// local control plane (internal/devcluster), behind a round-robin TCP proxy
// that checks each replica's /readyz and plays the Service. Replicas can be
// killed, stopped gracefully and started again. tests/ha and `make demo-ha`
// use it; it only ever listens on loopback addresses.
package hacluster
