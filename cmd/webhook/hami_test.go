package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingHAMiConfigMapStopsStart: a configuration naming HAMi's
// device config by ConfigMap (devices.hamiConfigMap) whose ConfigMap the
// API server does not have: the webhook exits 2 before serving, naming
// the ConfigMap, rather than deciding with nvidia's defaults alone (every
// other family's quota unenforced). The chart keeps this message as the
// container's termination message, in the pod's status.
func TestMissingHAMiConfigMapStopsStart(t *testing.T) {
	var asked []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,` +
			`"message":"configmaps \"hami-scheduler-device\" not found","details":{"name":"hami-scheduler-device","kind":"configmaps"}}`))
	}))
	defer api.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "+api.URL+"}}]\n"+
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"kube-system/hami-scheduler-device": "GET /api/v1/namespaces/kube-system/configmaps/hami-scheduler-device",
		"hami-scheduler-device":             "GET /api/v1/namespaces/gpuadmit-system/configmaps/hami-scheduler-device",
	} {
		asked = nil
		cfg := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfg, []byte("apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices: {hamiConfigMap: "+ref+"}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		code := run(context.Background(), []string{"--config=" + cfg, "--kubeconfig=" + kubeconfig, "--namespace=gpuadmit-system"}, io.Discard, &stderr)
		ns, name, _ := strings.Cut(strings.TrimPrefix(want, "GET /api/v1/namespaces/"), "/configmaps/")
		if code != 2 || !strings.Contains(stderr.String(), "webhook: devices.hamiConfigMap: ConfigMap "+ns+"/"+name+" (HAMi's device config): configmaps \"hami-scheduler-device\" not found") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming the missing ConfigMap", ref, code, stderr.String())
		}
		if len(asked) != 1 || asked[0] != want {
			t.Errorf("%s: the API server was asked %q, want %q", ref, asked, want)
		}
	}
}
