package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
)

// gpuPod is a one-GPU pod of team-a asking mib MiB, as YAML.
func gpuPod(name string, mib int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: team-a}\n"+
		"spec: {containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1, nvidia.com/gpumem: %d}}}]}\n", name, mib)
}

// gpuPodJSON is gpuPod as JSON.
func gpuPodJSON(name string, mib int) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":"team-a"},`+
		`"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpu":1,"nvidia.com/gpumem":%d}}}]}}`, name, mib)
}

// writeTree writes files (slash-separated paths to their text) under a
// new directory and returns it.
func writeTree(t *testing.T, files map[string]string) string {
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

// TestRepeatedFilename: every -f is read, in order, as kubectl reads it,
// and the pods of all are decided one after the other against team-a's
// 24 GiB quota (examples/state/idle-a10-quota24g.yaml).
func TestRepeatedFilename(t *testing.T) {
	files := writeTree(t, map[string]string{
		"first.yaml":  gpuPod("first", 20480),
		"second.yaml": gpuPod("second", 8192),
		"node.yaml":   "apiVersion: v1\nkind: Node\nmetadata: {name: gpu-node}\n",
		"a,b.yaml":    gpuPod("first", 20480) + "---\n" + gpuPod("second", 8192),
	})
	dir := writeTree(t, map[string]string{
		"1-small.yaml":    gpuPod("small", 4096),
		"2-mid.yml":       gpuPod("mid", 8192),
		"notes.txt":       "not a manifest: not read",
		"sub/3-big.json":  gpuPodJSON("big", 16384),
		"empty/README.md": "",
	})
	first, second := filepath.Join(files, "first.yaml"), filepath.Join(files, "second.yaml")
	idle := state + "idle-a10-quota24g.yaml"
	tests := []apptest.Case{
		{Name: "two files: the second's pod no longer fits, exit 1, both reported",
			Args: []string{"eval", "-o", "json", "-f", first, "-f", second, "--state", idle}, WantCode: 1,
			WantOut: `{"allowed":false,"objects":[
				{"kind":"Pod","namespace":"team-a","name":"first","replicas":1,"admitted":1,"allowed":true,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[],"warnings":[]},
				{"kind":"Pod","namespace":"team-a","name":"second","replicas":1,"admitted":0,"allowed":false,"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 8192 MiB, 20480 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],
				"warnings":[]}]}`},
		{Name: "in the order given", Args: []string{"eval", "-o", "json", "-f", second, "-f", first, "--state", idle}, WantCode: 1,
			WantObjects: []string{"Pod team-a/second allowed", "Pod team-a/first denied"}},
		{Name: "a comma is part of a file name", Args: []string{"eval", "-o", "json", "-f", filepath.Join(files, "a,b.yaml"), "--state", idle},
			WantObjects: []string{"Pod team-a/first allowed", "Pod team-a/second denied"}, WantCode: 1},
		{Name: "a file and standard input", Args: []string{"eval", "-o", "json", "-f", first, "-f", "-", "--state", idle}, Stdin: gpuPod("piped", 2048),
			WantObjects: []string{"Pod team-a/first allowed", "Pod team-a/piped allowed"}},
		{Name: "a directory: its manifest files, not its subdirectories",
			Args: []string{"eval", "-o", "json", "-f", dir, "--state", idle}, WantObjects: []string{"Pod team-a/small allowed", "Pod team-a/mid allowed"}},
		{Name: "-R: its subdirectories too, where the last pod no longer fits",
			Args: []string{"eval", "-o", "json", "-f", dir, "-R", "--state", idle}, WantCode: 1,
			WantObjects: []string{"Pod team-a/small allowed", "Pod team-a/mid allowed", "Pod team-a/big denied"}},
		{Name: "--recursive, a directory then a file", Args: []string{"eval", "--recursive", "-f", dir, "-f", first, "--state", idle, "-o", "table"}, WantCode: 1,
			WantTextSub: []string{"Pod    team-a      big     false     0/1        1     16384", "Pod    team-a      first   false     0/1        1     20480",
				"Pod team-a/first denied: namespace \"team-a\": nvidia.com/gpumem: pod needs 20480 MiB, 12288 MiB used + 0 MiB reserved"}},
		{Name: "a directory of one Pod keeps the one-pod shape", Args: []string{"eval", "-o", "json", "-f", filepath.Join(dir, "sub"), "--state", idle},
			WantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":16384,"gpucores":0},"denials":[],"warnings":[]}`},
		{Name: "effective: two files", Args: []string{"effective", "-o", "json", "-f", first, "-f", second},
			WantOut: `{"objects":[
				{"kind":"Pod","namespace":"team-a","name":"first","replicas":1,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":20480,"gpucores":0}],"unresolved":[]},
				{"kind":"Pod","namespace":"team-a","name":"second","replicas":1,"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":8192,"gpucores":0}],"unresolved":[]}]}`},
		{Name: "effective: a directory, -R", Args: []string{"effective", "-o", "json", "-R", "-f", dir},
			WantObjects: []string{"Pod team-a/small", "Pod team-a/mid", "Pod team-a/big"}},
		{Name: "standard input twice", Args: []string{"eval", "-f", "-", "-f", "-", "--state", idle}, WantCode: 2,
			WantErrSub: "gpuadmit eval: standard input (-) is named twice"},
		{Name: "-f - among others and --state -", Args: []string{"eval", "-f", first, "-f", "-", "--state", "-"}, WantCode: 2,
			WantErrSub: "-f and --state cannot both read standard input"},
		{Name: "a directory without manifests", Args: []string{"eval", "-f", first, "-f", filepath.Join(dir, "empty"), "--state", idle}, WantCode: 2,
			WantErrSub: "empty: a directory without .json, .yaml or .yml files (-R reads its subdirectories too)"},
		{Name: "a missing file among others: the others printed, then the error", Args: []string{"effective", "-f", first, "-f", "nope.yaml"}, WantCode: 2,
			WantTextSub: []string{"Pod    team-a      first"}, WantErrSub: "open nope.yaml: no such file"},
		{Name: "no pod in any of them", Args: []string{"effective", "-f", filepath.Join(files, "node.yaml"), "-f", idle}, WantCode: 2,
			WantErrSub: "node.yaml, ../../../examples/state/idle-a10-quota24g.yaml: no Pod, workload"},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
