package metrics

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// ServingOptions serve /metrics over HTTPS with the webhook's certificate,
// to clients whose bearer token the API server authenticates (TokenReview)
// and authorizes for GET /metrics (SubjectAccessReview): the usage gauges
// name every namespace's limits and usage. MetricsInsecure serves plain
// HTTP to anyone. addr is where it listens ("0": nowhere); minTLS the
// lowest TLS version it accepts.
func ServingOptions(addr string, insecure bool, minTLS uint16, serving Certificates) metricsserver.Options {
	o := metricsserver.Options{BindAddress: addr}
	if insecure {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	o.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = minTLS
		c.GetCertificate = serving.GetCertificate
	}}
	return o
}
