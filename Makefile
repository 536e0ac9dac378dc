# gpuadmit build, test and lint targets. `make test` is what CI runs (.ci/run).
SHELL := /usr/bin/env bash
GO ?= go
BIN := $(CURDIR)/bin
export GOFLAGS ?= -buildvcs=false
# go-nvml's nvml.h declares deprecated functions; keep cgo builds quiet.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

.PHONY: all build images push images-test manifests test unit policies lint fmt vet golangci-lint generate verify-generated bench fuzz demo demo-ha clean

all: build

# The command line's version, commit and build date (`gpuadmit version`), and
# the webhook's (gpuadmit_build_info; it has no build date): the commit when
# git can tell it, else "unknown". make build names the version
# GPUADMIT_VERSION (dev), make release GPUADMIT_RELEASE (v and the chart's appVersion).
GPUADMIT_VERSION ?= dev
GPUADMIT_RELEASE ?= v$(APP_VERSION)
GPUADMIT_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
gpuadmit_ldflags = -X main.version=$(1) \
	-X main.commit=$(GPUADMIT_COMMIT) \
	-X main.buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

build:
	$(GO) build -o $(BIN)/ ./cmd/...
	$(GO) build -ldflags "$(call gpuadmit_ldflags,$(GPUADMIT_VERSION))" -o $(BIN)/gpuadmit ./cmd/gpuadmit
	$(GO) build -ldflags "$(call gpuadmit_ldflags,$(GPUADMIT_VERSION))" -o $(BIN)/webhook ./cmd/webhook
	cp $(BIN)/gpuadmit $(BIN)/kubectl-gpuadmit

## release: the command line stripped for distribution (-trimpath, no symbol table nor DWARF) in bin/release/,
## as gpuadmit and kubectl-gpuadmit, version GPUADMIT_RELEASE.
.PHONY: release
release:
	$(GO) build -trimpath -ldflags "-s -w $(call gpuadmit_ldflags,$(GPUADMIT_RELEASE))" -o $(BIN)/release/gpuadmit ./cmd/gpuadmit
	cp $(BIN)/release/gpuadmit $(BIN)/release/kubectl-gpuadmit

## test: everything CI checks: lint, unit tests and each benchmark once (fuzz seed corpora included), the example policies, the monitoring files, the Gatekeeper comparison once, the image builder's tests, integration suites (tests/images among them: make images).
test: lint unit unit-race policies monitoring peer-1x images-test integration

## policies: the example policy library through the command line, as a policy author runs it.
policies:
	@echo ">> examples/policy: Rego tests with coverage, then the verify suite"
	$(GO) build -o $(BIN)/gpuadmit ./cmd/gpuadmit
	set -o pipefail; $(BIN)/gpuadmit policy test examples/policy --coverage | sed -n '/^PASS:\|^FAIL:\|COVERAGE/,$$p'
	$(BIN)/gpuadmit policy verify examples/policy/suite.yaml

## unit-race: the packages whose tests run concurrent paths, again under the race detector (their race tests skip
## without it): the ledger, the reservations, the decision, the membership, the webhook server, the admission handlers.
## -short (the ledger's model test takes 10k steps instead of 100k: six minutes under -race on 2 cores otherwise);
## TestSlowClients is left out: it bounds the heap, which the race detector inflates (it runs in unit).
RACE_PKGS ?= ./pkg/ledger/... ./pkg/feed/... ./pkg/admitqueue/... ./pkg/absence/... ./pkg/reservation/... ./pkg/decision/... ./pkg/membership/... ./pkg/serving/... ./pkg/admission/...
.PHONY: unit-race
unit-race:
	@echo ">> unit tests of the concurrency-bearing packages with -race -short"
	$(GO) test -race -short -count=1 -skip '^TestSlowClients$$' $(RACE_PKGS)

unit:
	@echo ">> unit tests and each benchmark once (go test -bench . -benchtime=1x ./...; the first run compiles the dependencies, a few minutes)"
	$(GO) test -count=1 -bench . -benchtime=1x ./...

## lint: golangci-lint (pinned in tools/lint; the rules in .golangci.yml: staticcheck, govet, revive, gocritic,
## loggercheck, errorlint, unused, no function over 60 lines or of cyclomatic complexity over 15) on every module
## and on the test build of the webhook, the dead-code pass, the layering (hack/layering), gofmt on every file, and
## the generated files.
lint: fmt golangci-lint deadcode layering verify-generated

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	@echo ">> go vet"
	$(GO) vet ./...

GOLANGCI_LINT := $(BIN)/golangci-lint
$(GOLANGCI_LINT): tools/lint/go.mod tools/lint/go.sum
	@echo ">> building golangci-lint (first time only; about a minute)"
	cd tools/lint && $(GO) build -o $(GOLANGCI_LINT) github.com/golangci/golangci-lint/v2/cmd/golangci-lint

golangci-lint: $(GOLANGCI_LINT)
	@echo ">> golangci-lint (.golangci.yml)"
	$(GOLANGCI_LINT) run ./...
	$(GOLANGCI_LINT) run --build-tags gpuadmit_testhooks ./cmd/webhook/... ./internal/...
	cd tests/monitoring && $(GOLANGCI_LINT) run ./...
	cd tests/peer && $(GOLANGCI_LINT) run ./...
	cd tools/images && $(GOLANGCI_LINT) run ./...

## deadcode: the functions of pkg/, cmd/ and policy/ that no main in ./cmd reaches (golang.org/x/tools/cmd/deadcode,
## pinned in tools/deadcode), less the few hack/deadcode/allow.txt keeps, each with its reason.
DEADCODE := $(BIN)/deadcode
$(DEADCODE): tools/deadcode/go.mod tools/deadcode/go.sum
	@echo ">> building deadcode (first time only)"
	cd tools/deadcode && $(GO) build -o $(DEADCODE) golang.org/x/tools/cmd/deadcode

.PHONY: deadcode layering
deadcode: $(DEADCODE)
	@echo ">> deadcode (hack/deadcode/allow.txt)"
	hack/deadcode/deadcode.sh $(DEADCODE)

## layering: what each package may not depend on, checked on `go list -deps` (hack/layering's table, the one place
## the layering is written).
layering:
	@echo ">> layering (hack/layering)"
	$(GO) test -count=1 ./hack/layering/

## generate: the deepcopy functions and CRDs (GPUUsage, GPUReservationSet) from pkg/apis (controller-gen, pinned in tools/codegen).
CONTROLLER_GEN := $(BIN)/controller-gen
$(CONTROLLER_GEN): tools/codegen/go.mod tools/codegen/go.sum
	@echo ">> building controller-gen (first time only)"
	cd tools/codegen && $(GO) build -o $(CONTROLLER_GEN) sigs.k8s.io/controller-tools/cmd/controller-gen

# The CRD goes into the chart (charts/gpuadmit/files/crd); `make manifests` carries it on into manifests/crd.
GENERATED := pkg/apis/gpuadmit/v1alpha1/zz_generated.deepcopy.go pkg/apis/config/v1alpha1/zz_generated.deepcopy.go charts/gpuadmit/files/crd/gpuadmit.io_gpuusages.yaml \
	charts/gpuadmit/files/crd/gpuadmit.io_gpureservationsets.yaml
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object paths=./pkg/apis/... crd:crdVersions=v1 output:crd:artifacts:config=charts/gpuadmit/files/crd

## verify-generated: fails when the generated files differ from what pkg/apis generates (then they are regenerated).
verify-generated: $(CONTROLLER_GEN)
	@echo ">> checking the generated API code (deepcopy) and CRDs"
	@tmp=$$(mktemp -d); for f in $(GENERATED); do cp $$f $$tmp/$$(echo $$f | tr / _); done; \
	$(MAKE) --no-print-directory generate >/dev/null; \
	for f in $(GENERATED); do if ! diff -u $$tmp/$$(echo $$f | tr / _) $$f; then \
	  echo "$$f was stale: regenerated it from pkg/apis (make generate); commit it"; rm -rf $$tmp; exit 1; fi; done; rm -rf $$tmp

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

## demo: the main job. Starts kube-apiserver + etcd + kube-controller-manager (built from source, bin/k8s-*),
## runs the admission webhook, plays the seed's four scenarios through kubectl, one line each, then a fifth:
## a Deployment refused as a whole, scaled within its quota, and `gpuadmit why` on a stalled one; stops.
demo: envtest-bins
	@echo ">> building the demo"
	@$(GO) build -o $(BIN)/demo ./cmd/demo
	@$(BIN)/demo --assets $(ENVTEST_ASSETS) --manifests manifests/webhook --examples examples/pods --workloads examples/workloads

## demo-ha: three webhook replicas (separate processes) behind a round-robin proxy on the same
## control plane: a burst, a replica killed mid-burst, a rolling restart under load; one line each.
demo-ha: envtest-bins
	@echo ">> building the webhook and the HA demo"
	@$(GO) build -o $(BIN)/webhook ./cmd/webhook
	@$(GO) build -o $(BIN)/demo-ha ./cmd/demo-ha
	@$(BIN)/demo-ha --assets $(ENVTEST_ASSETS) --manifests manifests/webhook --webhook $(BIN)/webhook

## images: the webhook (static) and NVML agent (cgo, with the glibc of the build machine's Debian packages) images
## for linux/amd64 and linux/arm64, without a container daemon (tools/images, go-containerregistry): one OCI image
## layout in IMAGES_DIR (bin/images) holding a multi-architecture index per image, named as the chart's values.yaml
## names them (image.repository/tag, agent.image.repository/tag; an empty tag is the chart's appVersion). Reproducible:
## every time in them is the commit's (SOURCE_DATE_EPOCH). The arm64 agent needs aarch64-linux-gnu-gcc (Debian:
## gcc-aarch64-linux-gnu libc6-dev-arm64-cross).
CHART := charts/gpuadmit
APP_VERSION := $(shell awk '$$1 == "appVersion:" { gsub(/"/, "", $$2); print $$2; exit }' $(CHART)/Chart.yaml)
IMAGES_DIR ?= $(BIN)/images
IMAGE_ARCHES ?= amd64,arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
GPUADMIT_REVISION := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
IMAGES_BUILDER := $(BIN)/images-builder
$(IMAGES_BUILDER): tools/images/go.mod tools/images/go.sum $(wildcard tools/images/*.go)
	@echo ">> building the image builder (tools/images)"
	cd tools/images && $(GO) build -o $(IMAGES_BUILDER) .

images: $(IMAGES_BUILDER)
	$(IMAGES_BUILDER) build --chart $(CHART) --out $(IMAGES_DIR) --arch $(IMAGE_ARCHES) \
	  --version $(GPUADMIT_RELEASE) --revision $(GPUADMIT_REVISION) --source-date-epoch $(SOURCE_DATE_EPOCH)

## push: push the images of IMAGES_DIR (make images first) to REGISTRY=host/prefix as REGISTRY/gpuadmit-webhook:TAG and
## REGISTRY/gpuadmit-nvml-agent:TAG (both architectures), with the docker configuration's credentials.
push: $(IMAGES_BUILDER)
	@test -n "$(REGISTRY)" || { echo "make push: set REGISTRY=host/prefix, e.g. make push REGISTRY=ghcr.io/my-org"; exit 1; }
	$(IMAGES_BUILDER) push --layout $(IMAGES_DIR) --registry $(REGISTRY)

## images-test: the image builder's own tests (tools/images): reproducible layers, glibc, a push to an in-process registry.
images-test:
	cd tools/images && $(GO) test -count=1 ./...

clean:
	rm -rf $(BIN)

# Integration suites (real kube-apiserver + etcd built from source) are defined in tests/.
-include tests/tools/tools.mk
-include tests/monitoring/monitoring.mk
-include tests/peer/peer.mk
integration:: ;

## manifests: write the kustomize base under manifests/ from the Helm chart (tests/chart fails when it is stale).
manifests: $(ENVTEST_BINS) $(HELM)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) $(GO) test -count=1 ./tests/chart -run '^TestManifestsFromChart$$' -update -v | grep 'manifests/:'
