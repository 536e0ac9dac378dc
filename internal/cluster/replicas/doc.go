// Package replicas runs gpuadmit as several webhook processes (cmd/webhook
// built from this checkout with the gpuadmit_testhooks tag, each with
// --kubeconfig and --cert-dir) on a local control plane
// (internal/cluster/local), behind a round-robin TCP proxy
// (internal/cluster/tcpproxy) that checks each replica's /readyz and plays
// the Service. Replicas can be killed, paused, stopped gracefully and
// started again, with the fault-injection flags of
// internal/cluster/testhooks. tests/ha and `make demo-ha` use it; it only
// ever listens on loopback addresses.
package replicas
