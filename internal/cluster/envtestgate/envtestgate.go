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
