// Package envtestgate decides whether an integration test can run: it returns
// the directory of the kube-apiserver, etcd and kubectl binaries named by
// KUBEBUILDER_ASSETS, skips the test when that is unset, and fails it instead
// when GPUADMIT_REQUIRE_ENVTEST=1 (as `make integration` sets it), so CI can
// never pass by skipping.
package envtestgate
