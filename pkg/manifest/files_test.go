package manifest_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// tree writes files (slash-separated paths to their text) under a new
// directory and returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// namedPod is a one-pod manifest.
func namedPod(name string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + "}\nspec: {containers: [{name: c}]}\n"
}

func TestReadFiles(t *testing.T) {
	root := tree(t, map[string]string{
		"a.yaml":         namedPod("a"),
		"b.yml":          namedPod("b"),
		"c.json":         `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},"spec":{"containers":[{"name":"c"}]}}`,
		"notes.txt":      "not a manifest",
		"sub/d.yaml":     namedPod("d"),
		"sub/deep/e.yml": namedPod("e"),
		"empty/x.txt":    "",
		"single.txt":     namedPod("s"),
	})
	at := func(p string) string { return filepath.Join(root, p) }
	tests := []struct {
		name       string
		paths      []string
		recursive  bool
		stdin      string
		wantPods   []string
		wantErrSub string
	}{
		{name: "files in the order given", paths: []string{at("b.yml"), at("a.yaml")}, wantPods: []string{"b", "a"}},
		{name: "a file of any name, named itself", paths: []string{at("single.txt")}, wantPods: []string{"s"}},
		{name: "a directory: its manifest files, lexically, not its subdirectories", paths: []string{root}, wantPods: []string{"a", "b", "c"}},
		{name: "-R: the subdirectories too", paths: []string{root}, recursive: true, wantPods: []string{"a", "b", "c", "d", "e"}},
		{name: "standard input among files", paths: []string{at("a.yaml"), "-", at("sub")}, stdin: namedPod("in"), wantPods: []string{"a", "in", "d"}},
		{name: "standard input twice", paths: []string{"-", "-"}, wantErrSub: "standard input (-) is named twice"},
		{name: "a directory without manifests", paths: []string{at("empty")}, wantErrSub: "empty: a directory without .json, .yaml or .yml files (-R reads its subdirectories too)"},
		{name: "a missing file among others", paths: []string{at("a.yaml"), at("nope.yaml")}, wantErrSub: "nope.yaml: no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := manifest.ReadFiles(tt.paths, tt.recursive, strings.NewReader(tt.stdin))
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("error = %v, want %q", err, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range objs.Workloads {
				got = append(got, w.Name)
			}
			if !slices.Equal(got, tt.wantPods) || len(objs.Pods) != len(tt.wantPods) {
				t.Errorf("pods %q (%d Pods), want %q", got, len(objs.Pods), tt.wantPods)
			}
		})
	}
}
