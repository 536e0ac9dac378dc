package main

import (
	"bytes"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestPush: `images push` (as make push runs it) writes each multi-arch
// index of the layout to REGISTRY/<name>:<tag> on a registry that wants
// credentials, taking them from the docker configuration ($DOCKER_CONFIG);
// without them, or with wrong ones, nothing is pushed and the exit status
// is 1.
func TestPush(t *testing.T) {
	reg := httptest.NewServer(basicAuth("ci", "s3cret", registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	dir := filepath.Join(t.TempDir(), "layout")
	want := testLayout(t, dir)

	for _, tc := range []struct{ name, user, pass string }{{"no credentials", "", ""}, {"wrong password", "ci", "nope"}} {
		t.Setenv("DOCKER_CONFIG", dockerConfig(t, host, tc.user, tc.pass))
		var out, errs bytes.Buffer
		if code := run(t.Context(), []string{"push", "--layout", dir, "--registry", host + "/team"}, &out, &errs); code != 1 {
			t.Errorf("%s: exit %d, want 1; stdout %s stderr %s", tc.name, code, out.String(), errs.String())
		}
		if !strings.Contains(errs.String(), "UNAUTHORIZED") && !strings.Contains(errs.String(), "401") {
			t.Errorf("%s: stderr %q does not say unauthorized", tc.name, errs.String())
		}
	}

	t.Setenv("DOCKER_CONFIG", dockerConfig(t, host, "ci", "s3cret"))
	var out, errs bytes.Buffer
	if code := run(t.Context(), []string{"push", "--layout", dir, "--registry", host + "/team/"}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	auth := remote.WithAuth(&authn.Basic{Username: "ci", Password: "s3cret"})
	for ref, d := range want {
		dst, err := name.NewTag(host + "/team/" + ref)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), dst.String()+"@"+d.String()) {
			t.Errorf("stdout does not name %s@%s:\n%s", dst, d, out.String())
		}
		idx, err := remote.Index(dst, auth)
		if err != nil {
			t.Fatalf("%s: %v", dst, err)
		}
		if got, _ := idx.Digest(); got != d {
			t.Errorf("%s: digest %s, want %s (the layout's)", dst, got, d)
		}
		m, _ := idx.IndexManifest()
		var platforms []string
		for _, c := range m.Manifests {
			platforms = append(platforms, c.Platform.String())
			if _, err := remote.Image(dst.Context().Digest(c.Digest.String()), auth); err != nil {
				t.Errorf("%s %s: %v", dst, c.Platform, err)
			}
		}
		if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
			t.Errorf("%s: platforms %v", dst, platforms)
		}
	}
}

// TestPushRefuses: no registry, no layout are errors before anything is sent.
func TestPushRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"push", "--layout", t.TempDir()}, 2, "--registry is required"},
		{[]string{"push", "--layout", filepath.Join(t.TempDir(), "none"), "--registry", "127.0.0.1:1/x"}, 1, "run make images first"},
		{[]string{"pull"}, 2, `unknown command "pull"`},
		{nil, 2, "usage"},
	} {
		var out, errs bytes.Buffer
		if code := run(t.Context(), tc.args, &out, &errs); code != tc.code || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errs.String(), tc.code, tc.want)
		}
	}
}

// testLayout writes a layout of two small two-platform indexes, as build
// names them, and returns each one's name:tag and digest.
func testLayout(t *testing.T, dir string) map[string]v1.Hash {
	t.Helper()
	want := map[string]v1.Hash{}
	var all []namedIndex
	for _, ref := range []string{"ghcr.io/gpuadmit/gpuadmit-webhook:0.1.0", "ghcr.io/gpuadmit/gpuadmit-nvml-agent:0.1.0"} {
		var adds []mutate.IndexAddendum
		for _, a := range []string{"amd64", "arm64"} {
			l, err := tarLayer([]entry{fileEntry("/"+a, 0o755, []byte(ref))}, epoch)
			if err != nil {
				t.Fatal(err)
			}
			img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), l)
			if err != nil {
				t.Fatal(err)
			}
			adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: a}}})
		}
		idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
		d, err := idx.Digest()
		if err != nil {
			t.Fatal(err)
		}
		want[ref[strings.LastIndex(ref, "/")+1:]] = d
		all = append(all, namedIndex{ref: ref, idx: idx})
	}
	if err := writeLayout(dir, all); err != nil {
		t.Fatal(err)
	}
	return want
}

// dockerConfig is a docker configuration directory with user:pass for host
// (none when user is empty).
func dockerConfig(t *testing.T, host, user, pass string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := `{"auths":{}}`
	if user != "" {
		cfg = `{"auths":{"` + host + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + `"}}}`
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// basicAuth answers 401 with a Basic challenge unless the request carries user:pass.
func basicAuth(user, pass string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
