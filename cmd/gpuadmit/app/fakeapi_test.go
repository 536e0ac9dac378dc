package app

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeAPI is an API server that has the namespaces it is given and no
// other object: every list is empty but the namespaces', every get of a
// ConfigMap or Namespace not found. It records the paths asked for.
type fakeAPI struct {
	namespaces []string
	// listingPods, when set, receives a value when a pod list arrives,
	// which is then answered once release is closed: the test holds the
	// read in flight as long as it needs.
	listingPods chan<- struct{}
	release     <-chan struct{}
	mu          sync.Mutex
	paths       []string
}

// listKinds are the kinds of the lists the commands make, by resource.
var listKinds = map[string]string{
	"nodes": "NodeList", "pods": "PodList", "resourcequotas": "ResourceQuotaList", "configmaps": "ConfigMapList",
	"resourceslices": "ResourceSliceList", "resourceclaims": "ResourceClaimList", "resourceclaimtemplates": "ResourceClaimTemplateList",
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.paths = append(f.paths, r.URL.Path)
	f.mu.Unlock()
	// api/v1 or apis/resource.k8s.io/v1, [namespaces/NS], RESOURCE [NAME]
	path, apiVersion := strings.TrimPrefix(r.URL.Path, "/api/v1/"), "v1"
	if p, ok := strings.CutPrefix(r.URL.Path, "/apis/resource.k8s.io/v1/"); ok {
		path, apiVersion = p, "resource.k8s.io/v1"
	}
	parts := strings.Split(path, "/")
	resource := parts[len(parts)-1]
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/api/v1/namespaces":
		items := make([]string, len(f.namespaces))
		for i, ns := range f.namespaces {
			items[i] = fmt.Sprintf(`{"metadata":{"name":%q}}`, ns)
		}
		fmt.Fprintf(w, `{"kind":"NamespaceList","apiVersion":"v1","metadata":{},"items":[%s]}`, strings.Join(items, ","))
	case listKinds[resource] != "":
		if resource == "pods" && f.listingPods != nil {
			f.listingPods <- struct{}{}
			<-f.release
		}
		fmt.Fprintf(w, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"1"},"items":[]}`, listKinds[resource], apiVersion)
	default:
		notFound(w)
	}
}

func notFound(w http.ResponseWriter) {
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","reason":"NotFound","code":404}`)
}

// asked reports whether a request for path was made.
func (f *fakeAPI) asked(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.paths, path)
}

// kubeconfig writes a kubeconfig whose current context, dead, is the
// cluster at server, in namespace ns (none when empty), and returns its
// path.
func kubeconfig(t *testing.T, server, ns string) string {
	t.Helper()
	text := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: dead, context: {cluster: c, user: u, namespace: %q}}]
current-context: dead
`, server, ns)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startFakeAPI serves f and returns a kubeconfig for it, in namespace ns.
func startFakeAPI(t *testing.T, f *fakeAPI, ns string) string {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return kubeconfig(t, srv.URL, ns)
}
