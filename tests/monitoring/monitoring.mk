# The charts/gpuadmit/files/monitoring checks (a module of its own: Prometheus's PromQL
# parser and rule-file validation). -include'd by the root Makefile; paths
# are relative to the repository root.

.PHONY: monitoring

## monitoring: the alert rules and the Grafana dashboard parse, and the metric names they use match charts/gpuadmit/files/monitoring/metrics.txt.
monitoring:
	@echo ">> charts/gpuadmit/files/monitoring: alert rules and dashboard (tests/monitoring; the first run downloads and compiles Prometheus's parser)"
	cd tests/monitoring && $(GO) test -count=1 ./...
