# gpuadmit build, test and lint targets. `make test` is what CI runs (.ci/run).
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
export GOFLAGS ?= -buildvcs=false
# go-nvml's nvml.h declares deprecated functions; keep cgo builds quiet.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all build test unit lint fmt vet staticcheck bench fuzz demo clean

all: build

build:
	$(GO) build -o $(BIN)/ ./cmd/...

## test: everything CI checks: lint, unit tests (fuzz seed corpora included), integration suites.
test: lint unit integration

unit:
	@echo ">> unit tests (go test ./...; the first run compiles the dependencies, a few minutes)"
	$(GO) test -count=1 ./...

lint: fmt vet staticcheck

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo ">> go vet"
	$(GO) vet ./...

STATICCHECK := $(BIN)/staticcheck
$(STATICCHECK): tools/lint/go.mod tools/lint/go.sum
	@echo ">> building staticcheck (first time only)"
	cd tools/lint && $(GO) build -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck

staticcheck: $(STATICCHECK)
	$(STATICCHECK) ./...

BENCH ?= .
bench:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...

FUZZTIME ?= 30s
FUZZ_TARGETS := \
	./pkg/effective:FuzzParseQuantity \
	./pkg/devices:FuzzDecodeNodeDevices \
	./pkg/devices:FuzzDecodeHAMiNodeRegister \
	./pkg/devices:FuzzDecodePodAllocation \
	./pkg/admission:FuzzHandlers
fuzz:
	@for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; fn=$${t##*:}; \
	  echo "== $$fn ($$pkg)"; $(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; done

## demo: the main job. Starts kube-apiserver + etcd (built from source, bin/k8s-*), runs the
## admission webhook, plays the seed's four scenarios through kubectl, prints one line each, stops.
demo: envtest-bins
	@echo ">> building the demo"
	@$(GO) build -o $(BIN)/demo ./cmd/demo
	@$(BIN)/demo --assets $(ENVTEST_ASSETS) --manifests manifests/webhook --examples examples/pods

clean:
	rm -rf $(BIN)

# Integration suites (real kube-apiserver + etcd built from source) are defined in tests/.
-include tests/tools/tools.mk
integration:: ;
