# Gatekeeper's constraint framework and gpuadmit's decision side by side on the
# same namespace GPU memory quota (tests/peer: a module of its own, so that
# the main module does not depend on the framework). -include'd by the root
# Makefile; paths are relative to the repository root.

.PHONY: bench-peer peer-1x

## bench-peer: Gatekeeper's engine vs gpuadmit: same verdicts on random namespaces, then one review at 100/1000/10000 pods on each, and the ratios.
bench-peer:
	@echo ">> tests/peer: Gatekeeper's constraint framework vs gpuadmit (the first run downloads and compiles the framework)"
	@out=$$(mktemp) && trap 'rm -f "$$out" "$$out.rc"' EXIT && \
	{ cd tests/peer && $(GO) test -run TestSameVerdicts -bench . -benchmem -count=1 ./...; echo $$? >"$$out.rc"; } | tee "$$out" && \
	awk -f tests/peer/ratios.awk "$$out" && exit $$(cat "$$out.rc")

## peer-1x: the tests/peer verdict test and each of its benchmarks once, so that they keep building and running.
peer-1x:
	cd tests/peer && $(GO) test -count=1 -run . -bench . -benchtime=1x ./...
