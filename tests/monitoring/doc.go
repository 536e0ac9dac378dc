// Package monitoring holds the tests of charts/gpuadmit/files/monitoring: the Prometheus
// alert rules and the Grafana dashboard parse (PromQL, with Prometheus's
// own parser and rule-file validation), each alert has a duration, a
// severity and annotations that name what its expression keeps, and the
// metric names they use are exactly charts/gpuadmit/files/monitoring/metrics.txt, which
// the metrics suite (tests/metrics) checks against a running server's
// /metrics, GPU memory panels are in bytes, and docs/monitoring.md lists
// each alert with its duration, severity and what a responder does.
//
// It is a module of its own so that the main module does not depend on
// Prometheus's server code; it does not import the main module either.
// `go test ./... -update` rewrites metrics.txt.
package monitoring
