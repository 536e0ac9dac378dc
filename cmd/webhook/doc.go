// Command webhook is gpuadmit's admission webhook server: it reads the
// configuration file (--config, docs/configuration.md), takes the wiring of
// one deployment from flags (namespace, ports, certificates, names), and
// runs pkg/server (mutating /mutate-pods, validating /validate-pods,
// /healthz and /readyz on the probe address, Prometheus metrics on the
// metrics address) until SIGTERM or SIGINT, then shuts down gracefully.
package main
