package app

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
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
	tests := []cliCase{
		{name: "two files: the second's pod no longer fits, exit 1, both reported",
			args: []string{"eval", "-o", "json", "-f", first, "-f", second, "--state", idle}, wantCode: 1,
			wantOut: `{"allowed":false,"objects":[
				{"kind":"Pod","namespace":"team-a","name":"first","replicas":1,"admitted":1,"allowed":true,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"denials":[],"warnings":[]},
				{"kind":"Pod","namespace":"team-a","name":"second","replicas":1,"admitted":0,"allowed":false,"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"denials":[
				"namespace \"team-a\": nvidia.com/gpumem: pod needs 8192 MiB, 20480 MiB used + 0 MiB reserved, limit 24576 MiB (ResourceQuota \"gpu-quota\" limits.nvidia.com/gpumem)"],
				"warnings":[]}]}`},
		{name: "in the order given", args: []string{"eval", "-o", "json", "-f", second, "-f", first, "--state", idle}, wantCode: 1,
			wantObjects: []string{"Pod team-a/second allowed", "Pod team-a/first denied"}},
		{name: "a comma is part of a file name", args: []string{"eval", "-o", "json", "-f", filepath.Join(files, "a,b.yaml"), "--state", idle},
			wantObjects: []string{"Pod team-a/first allowed", "Pod team-a/second denied"}, wantCode: 1},
		{name: "a file and standard input", args: []string{"eval", "-o", "json", "-f", first, "-f", "-", "--state", idle}, stdin: gpuPod("piped", 2048),
			wantObjects: []string{"Pod team-a/first allowed", "Pod team-a/piped allowed"}},
		{name: "a directory: its manifest files, not its subdirectories",
			args: []string{"eval", "-o", "json", "-f", dir, "--state", idle}, wantObjects: []string{"Pod team-a/small allowed", "Pod team-a/mid allowed"}},
		{name: "-R: its subdirectories too, where the last pod no longer fits",
			args: []string{"eval", "-o", "json", "-f", dir, "-R", "--state", idle}, wantCode: 1,
			wantObjects: []string{"Pod team-a/small allowed", "Pod team-a/mid allowed", "Pod team-a/big denied"}},
		{name: "--recursive, a directory then a file", args: []string{"eval", "--recursive", "-f", dir, "-f", first, "--state", idle, "-o", "table"}, wantCode: 1,
			wantTextSub: []string{"Pod    team-a      big     false     0/1        1     16384", "Pod    team-a      first   false     0/1        1     20480",
				"Pod team-a/first denied: namespace \"team-a\": nvidia.com/gpumem: pod needs 20480 MiB, 12288 MiB used + 0 MiB reserved"}},
		{name: "a directory of one Pod keeps the one-pod shape", args: []string{"eval", "-o", "json", "-f", filepath.Join(dir, "sub"), "--state", idle},
			wantOut: `{"allowed":true,"effective":{"gpu":1,"gpumem":16384,"gpucores":0},"denials":[],"warnings":[]}`},
		{name: "effective: two files", args: []string{"effective", "-o", "json", "-f", first, "-f", second},
			wantOut: `{"objects":[
				{"kind":"Pod","namespace":"team-a","name":"first","replicas":1,"effective":{"gpu":1,"gpumem":20480,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":20480,"gpucores":0}],"unresolved":[]},
				{"kind":"Pod","namespace":"team-a","name":"second","replicas":1,"effective":{"gpu":1,"gpumem":8192,"gpucores":0},"containers":[{"name":"c","role":"app","gpu":1,"gpumem":8192,"gpucores":0}],"unresolved":[]}]}`},
		{name: "effective: a directory, -R", args: []string{"effective", "-o", "json", "-R", "-f", dir},
			wantObjects: []string{"Pod team-a/small", "Pod team-a/mid", "Pod team-a/big"}},
		{name: "standard input twice", args: []string{"eval", "-f", "-", "-f", "-", "--state", idle}, wantCode: 2,
			wantErrSub: "gpuadmit eval: standard input (-) is named twice"},
		{name: "-f - among others and --state -", args: []string{"eval", "-f", first, "-f", "-", "--state", "-"}, wantCode: 2,
			wantErrSub: "-f and --state cannot both read standard input"},
		{name: "a directory without manifests", args: []string{"eval", "-f", first, "-f", filepath.Join(dir, "empty"), "--state", idle}, wantCode: 2,
			wantErrSub: "empty: a directory without .json, .yaml or .yml files (-R reads its subdirectories too)"},
		{name: "a missing file among others", args: []string{"effective", "-f", first, "-f", "nope.yaml"}, wantCode: 2,
			wantErrSub: "open nope.yaml: no such file"},
		{name: "no pod in any of them", args: []string{"effective", "-f", filepath.Join(files, "node.yaml"), "-f", idle}, wantCode: 2,
			wantErrSub: "node.yaml, ../../../examples/state/idle-a10-quota24g.yaml: no Pod, workload"},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
