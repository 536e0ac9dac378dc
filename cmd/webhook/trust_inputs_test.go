package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	reportsv1alpha1 "github.com/openreports/reports-api/apis/openreports.io/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// readKinds lists the kinds gpuadmit reads, each with where that was
// found: the read verbs (get, list, watch) of the webhook's RBAC
// (manifests/webhook/rbac.yaml: a read it is not granted fails), the
// resources its webhook configurations send for review, and the informers,
// cache objects and raw list-watches of pkg/ (go/ast).
func readKinds(t *testing.T) map[string]string {
	t.Helper()
	kinds := kindsByResource(t)
	out := map[string]string{}
	add := func(resource, why string) {
		k, ok := kinds[strings.ToLower(resource)]
		if _, sub, scale := strings.Cut(resource, "/"); scale && sub == "scale" {
			k, ok = "Scale", true // a scale review carries an autoscaling/v1 Scale
		}
		if !ok {
			t.Errorf("%s: no kind of the scheme has the resource %q", why, resource)
			return
		}
		if _, seen := out[k]; !seen {
			out[k] = why
		}
	}
	for _, r := range rbacReads(t) {
		add(r, "a read verb of manifests/webhook/rbac.yaml")
	}
	for _, r := range reviewedResources(t) {
		add(r, "a webhook of manifests/webhook/webhooks.yaml reviews it")
	}
	for r, where := range codeReads(t) {
		if k, ok := kinds[strings.ToLower(r)]; ok {
			if _, seen := out[k]; !seen {
				out[k] = where
			}
			continue
		}
		if _, ok := out[r]; !ok { // a kind named by its Go type
			out[r] = where
		}
	}
	return out
}

// kindsByResource maps the (lower-case, plural) resource of every kind of
// gpuadmit's scheme to the kind.
func kindsByResource(t *testing.T) map[string]string {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), gpuadmitv1.AddToScheme(scheme), reportsv1alpha1.Install(scheme)); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for gvk := range scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") || strings.HasSuffix(gvk.Kind, "Options") {
			continue
		}
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		out[plural.Resource] = gvk.Kind
	}
	for _, k := range config.DefaultWorkloadKinds() { // the custom workload kinds the chart reviews
		out[strings.ToLower(k.Kind)+"s"] = k.Kind
	}
	return out
}

// yamlDocs decodes every document of a manifest file into a generic map.
func yamlDocs(t *testing.T, file string) [][]byte {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		docs = append(docs, d)
	}
}

// rbacReads lists the resources the webhook's roles may get, list or watch.
func rbacReads(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range yamlDocs(t, "../../manifests/webhook/rbac.yaml") {
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		if err := yaml.Unmarshal(d, &role); err != nil {
			t.Fatal(err)
		}
		if role.Kind != "ClusterRole" && role.Kind != "Role" {
			continue
		}
		for _, r := range role.Rules {
			if !slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "get" || v == "list" || v == "watch" }) {
				continue
			}
			for _, res := range r.Resources {
				if !strings.Contains(res, "/") {
					out = append(out, res)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("manifests/webhook/rbac.yaml grants no read")
	}
	return out
}

// reviewedResources lists the resources gpuadmit's webhooks review.
func reviewedResources(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, d := range yamlDocs(t, "../../manifests/webhook/webhooks.yaml") {
		var v admissionregistrationv1.ValidatingWebhookConfiguration
		if err := yaml.Unmarshal(d, &v); err != nil {
			t.Fatal(err)
		}
		for _, h := range v.Webhooks {
			for _, r := range h.Rules {
				out = append(out, r.Resources...)
			}
		}
	}
	return out
}

// codeReads scans pkg/ (tests left out) for what the server watches and
// reads: X.<Resources>().Informer() and Resource("<resources>") (a resource
// name), GetInformer(ctx, &T{}) and the keys of a cache's ByObject map
// (a kind). Each with the file that reads it.
func codeReads(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	walkGo(t, "../../pkg", func(file string, f *ast.File) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if r := callRead(n); r != "" {
					out[r] = file
				}
			case *ast.KeyValueExpr:
				if k := literalKind(n.Key); k != "" && isByObject(n.Value) {
					out[k] = file
				}
			}
			return true
		})
	})
	if len(out) == 0 {
		t.Fatal("found no informer in pkg/")
	}
	return out
}

// callRead is the resource or kind one call reads, or "".
func callRead(c *ast.CallExpr) string {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	switch sel.Sel.Name {
	case "Informer":
		if inner, ok := sel.X.(*ast.CallExpr); ok && len(c.Args) == 0 {
			if s, ok := inner.Fun.(*ast.SelectorExpr); ok && len(inner.Args) == 0 {
				return s.Sel.Name
			}
		}
	case "Resource":
		if len(c.Args) == 1 {
			if lit, ok := c.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				return s
			}
		}
	case "GetInformer":
		if len(c.Args) >= 2 {
			return literalKind(c.Args[1])
		}
	}
	return ""
}

// literalKind is T of &pkg.T{}, or "".
func literalKind(e ast.Expr) string {
	u, ok := e.(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return ""
	}
	lit, ok := u.X.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	if s, ok := lit.Type.(*ast.SelectorExpr); ok {
		return s.Sel.Name
	}
	return ""
}

// isByObject reports whether e is a cache.ByObject literal.
func isByObject(e ast.Expr) bool {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return false
	}
	s, ok := lit.Type.(*ast.SelectorExpr)
	return ok && s.Sel.Name == "ByObject"
}

// walkGo parses every non-test Go file under dir.
func walkGo(t *testing.T, dir string, visit func(string, *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		visit(strings.TrimPrefix(p, "../../"), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// readAnnotations lists the annotation keys gpuadmit reads or writes, each
// with where it was found: the string constants of pkg/ whose name says
// Annotation, every family's node register and pod assignment annotation,
// the pod annotations the demand reads, the watch's bookmark annotation.
func readAnnotations(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{metav1.InitialEventsAnnotationKey: "the pod watch keeps it (bookmarks)"}
	walkGo(t, "../../pkg", func(file string, f *ast.File) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				for i, name := range v.Names {
					if !strings.Contains(name.Name, "Annotation") || i >= len(v.Values) {
						continue
					}
					if lit, ok := v.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						key, _ := strconv.Unquote(lit.Value)
						out[key] = fmt.Sprintf("%s (%s)", name.Name, file)
					}
				}
			}
		}
	})
	for _, f := range append(effective.HAMiFamilies(), effective.Nvidia(), effective.Gpushare()) {
		if f.RegisterAnno != "" {
			out[f.RegisterAnno] = "the node annotation of family " + f.Name
		}
		if f.AllocAnno != "" {
			out[f.AllocAnno] = "the pod annotation of family " + f.Name
		}
	}
	for _, k := range effective.PodAnnotations() {
		out[k] = "a pod annotation the demand reads"
	}
	return out
}
