# Real control-plane binaries for the integration suites (and helm for the
# chart's tests), built from source.
# -include'd by the root Makefile; paths are relative to the repository root.
#
# ENVTEST_ASSETS is a directory named after a hash of everything that decides
# what gets built (tests/tools/go.mod, go.sum and etcd/main.go), so a version
# bump builds into a fresh directory and an unchanged tree reuses the binaries.

ENVTEST_TOOLS_DIR := $(CURDIR)/tests/tools
ENVTEST_HASH := $(shell cat $(ENVTEST_TOOLS_DIR)/go.mod $(ENVTEST_TOOLS_DIR)/go.sum $(ENVTEST_TOOLS_DIR)/etcd/main.go | sha256sum | cut -c1-12)
ENVTEST_ASSETS := $(CURDIR)/bin/k8s-$(ENVTEST_HASH)
ENVTEST_BINS := $(ENVTEST_ASSETS)/kube-apiserver $(ENVTEST_ASSETS)/etcd $(ENVTEST_ASSETS)/kubectl $(ENVTEST_ASSETS)/kube-controller-manager
HELM := $(ENVTEST_ASSETS)/helm

# Version stamped into kube-apiserver and kubectl (what `kubectl version` and
# /version report); must match k8s.io/kubernetes in tests/tools/go.mod.
ENVTEST_K8S_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2; exit }' $(ENVTEST_TOOLS_DIR)/go.mod)
ENVTEST_K8S_MINOR := $(word 2,$(subst ., ,$(ENVTEST_K8S_VERSION)))
ENVTEST_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(ENVTEST_K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(ENVTEST_K8S_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean

.PHONY: envtest-bins helm integration bench-relist bench-https bench-review bench-create

## envtest-bins: build kube-apiserver, kube-controller-manager, etcd and kubectl into $(ENVTEST_ASSETS) (once; ~12 min cold on 2 cores).
envtest-bins: $(ENVTEST_BINS)

## helm: build helm into $(ENVTEST_ASSETS) (once; ~2 min), for the chart's tests and `make manifests`.
helm: $(HELM)

$(ENVTEST_ASSETS)/kube-apiserver:
	@echo ">> building kube-apiserver $(ENVTEST_K8S_VERSION) from source into $(@D) (first time only; about 6 minutes on 2 cores)"
	cd $(ENVTEST_TOOLS_DIR) && $(GO) build -trimpath -ldflags '$(ENVTEST_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver

$(ENVTEST_ASSETS)/kube-controller-manager:
	@echo ">> building kube-controller-manager $(ENVTEST_K8S_VERSION) from source (first time only; about 3 minutes on 2 cores after kube-apiserver, whose packages it shares)"
	cd $(ENVTEST_TOOLS_DIR) && $(GO) build -trimpath -ldflags '$(ENVTEST_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-controller-manager

$(ENVTEST_ASSETS)/kubectl:
	@echo ">> building kubectl $(ENVTEST_K8S_VERSION) from source (first time only; about 2 minutes)"
	cd $(ENVTEST_TOOLS_DIR) && $(GO) build -trimpath -ldflags '$(ENVTEST_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kubectl

HELM_VERSION := $(shell awk '$$1 == "helm.sh/helm/v3" { print $$2; exit }' $(ENVTEST_TOOLS_DIR)/go.mod)
$(HELM):
	@echo ">> building helm $(HELM_VERSION) from source (first time only; about 2 minutes)"
	cd $(ENVTEST_TOOLS_DIR) && $(GO) build -trimpath -ldflags '-s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION)' -o $@ helm.sh/helm/v3/cmd/helm

$(ENVTEST_ASSETS)/etcd:
	@echo ">> building etcd from source (first time only; about 1 minute)"
	cd $(ENVTEST_TOOLS_DIR) && $(GO) build -trimpath -ldflags '-s -w' -o $@ ./etcd

## integration: the suites under tests/ on a real kube-apiserver + etcd (they fail, not skip, here),
## and each of their benchmarks once (-benchtime=1x: tests/relist at 2,000 pods, tests/ha's create latency).
integration:: $(ENVTEST_BINS) $(HELM)
	@echo ">> integration suites on kube-apiserver + etcd (tests/...; about 4 minutes)"
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) GPUADMIT_REQUIRE_ENVTEST=1 $(GO) test -timeout 30m -count=1 -bench . -benchtime=1x $$($(GO) list ./tests/... | grep -v '/tests/ha$$')
	@echo ">> tests/ha: three webhook processes on one control plane, alone so that they have the cores (about 4 minutes)"
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) GPUADMIT_REQUIRE_ENVTEST=1 $(GO) test -timeout 30m -count=1 -bench . -benchtime=1x ./tests/ha

RELIST_PODS ?= 100000
RELIST_NODES ?= 5000
## bench-relist: cold start to "synced and deciding" on an API server holding RELIST_PODS pods and RELIST_NODES nodes, JSON against protobuf, with RSS (tests/relist; filling takes minutes).
bench-relist: $(ENVTEST_BINS)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) GPUADMIT_REQUIRE_ENVTEST=1 GPUADMIT_RELIST_PODS=$(RELIST_PODS) GPUADMIT_RELIST_NODES=$(RELIST_NODES) \
	  $(GO) test -timeout 60m -run '^$$' -bench BenchmarkRelist -benchtime=2x -v ./tests/relist

## bench-https: the HTTPS path (/validate-pods against the decode+encode floor) with the server pinned to CPU 0 and the load generator in its own process on CPU 1 (taskset; 2 cores).
bench-https: $(ENVTEST_BINS)
	$(GO) build -o $(BIN)/loadgen ./cmd/loadgen
	taskset -c 0 $(BIN)/loadgen --assets $(ENVTEST_ASSETS) -n 20000 -c 16 --client-cpu 1

## bench-review: the HTTPS path (/validate-pods against the decode+encode floor), 10,000 reviews over 16 connections from a client in the same process (both cores shared).
bench-review: $(ENVTEST_BINS)
	$(GO) build -o $(BIN)/loadgen ./cmd/loadgen
	$(BIN)/loadgen --assets $(ENVTEST_ASSETS) -n 10000 -c 16

## bench-create: GPU pod creates through the API server (BenchmarkCreateLatency, tests/ha): three replicas, one, no webhook, and native ResourceQuota admission instead, p50 and p99.
bench-create: $(ENVTEST_BINS)
	KUBEBUILDER_ASSETS=$(ENVTEST_ASSETS) GPUADMIT_REQUIRE_ENVTEST=1 $(GO) test -count=1 -run '^$$' -bench CreateLatency -benchtime=1x -v ./tests/ha
