package server

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// metricsOptions serve /metrics over HTTPS with the webhook's certificate,
// to clients whose bearer token the API server authenticates (TokenReview)
// and authorizes for GET /metrics (SubjectAccessReview): the usage gauges
// name every namespace's limits and usage. MetricsInsecure serves plain
// HTTP to anyone.
func (s *Server) metricsOptions() metricsserver.Options {
	o := metricsserver.Options{BindAddress: s.opts.MetricsAddr}
	if s.opts.MetricsInsecure {
		return o
	}
	o.SecureServing = true
	o.FilterProvider = filters.WithAuthenticationAndAuthorization
	o.TLSOpts = []func(*tls.Config){func(c *tls.Config) {
		c.MinVersion = s.opts.TLSMinVersion
		c.GetCertificate = s.certificate
	}}
	return o
}
