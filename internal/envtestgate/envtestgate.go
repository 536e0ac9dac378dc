// Package envtestgate decides whether an integration test can run: it returns
// the directory of the kube-apiserver, etcd and kubectl binaries named by
// KUBEBUILDER_ASSETS, skips the test when that is unset, and fails it instead
// when GPUADMIT_REQUIRE_ENVTEST=1 (as `make integration` sets it), so CI can
// never pass by skipping.
package envtestgate

import (
	"os"
	"testing"
)

// Assets returns the envtest binary directory, or skips or fails t.
func Assets(t testing.TB) string {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets != "" {
		return assets
	}
	if os.Getenv("GPUADMIT_REQUIRE_ENVTEST") == "1" {
		t.Fatal("KUBEBUILDER_ASSETS is empty but GPUADMIT_REQUIRE_ENVTEST=1: run `make integration`, which builds kube-apiserver, etcd and kubectl first")
	}
	t.Skip("KUBEBUILDER_ASSETS is not set (run `make integration`)")
	return ""
}
