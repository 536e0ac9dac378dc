// Package server wires gpuadmit's admission webhook: a controller-runtime
// manager with a TLS webhook server (/mutate-pods, /validate-pods), the
// usage ledger fed by informers, the policy engine with ConfigMap hot
// reload, the shared decision function, certificate rotation, health and
// readiness probes and Prometheus metrics. cmd/webhook, the demo and the
// integration suites all run exactly this wiring.
package server
