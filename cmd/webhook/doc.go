// Command webhook is gpuadmit's admission webhook server: it reads the
// configuration file (--config, docs/configuration.md) and the HAMi device
// config its devices.hamiConfigMap names (read through the API server at
// start; without it the process exits 2 naming it), takes the wiring of
// one deployment from flags (namespace, ports, certificates, names), and
// runs pkg/server (mutating /mutate-pods, validating /validate-pods,
// /healthz and /readyz on the probe address, Prometheus metrics on the
// metrics address) until SIGTERM or SIGINT, then shuts down gracefully.
package main
