// Package forward sends the validating review of a GPU pod to the replica
// that owns its namespace, so that one replica writes each namespace's
// GPUUsage; anything that goes wrong falls back to deciding here. It
// trusts a peer only when it serves the replicas' shared certificate, and
// presents that certificate as its client certificate.
package forward
