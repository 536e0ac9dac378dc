// Package server wires gpuadmit's admission webhook, and only wires it: a
// controller-runtime manager with a TLS webhook server (/mutate-pods,
// /validate-pods, /validate-resourceclaims), the usage ledger fed by
// watches, the policy engine and its sync (pkg/policysync), the shared
// decision function, the reservation store, certificate rotation, health
// and readiness probes, the collectors (pkg/metrics), the peer forwarding
// (pkg/forward), the denials' Events (pkg/events), the elected summary
// writer (pkg/election) and the webhook-configuration check
// (pkg/webhookcheck). cmd/webhook, the demo and the integration suites all
// run exactly this wiring.
package server
