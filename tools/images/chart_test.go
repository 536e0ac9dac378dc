package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadChart: the references the chart's gpuadmit.image helper renders
// from its values: the registry (the image's, else global) before the
// repository, the tag, else appVersion.
func TestReadChart(t *testing.T) {
	tests := []struct {
		name, values        string
		webhook, agent, err string
	}{
		{name: "defaults", values: "image: {repository: r.io/a/w}\nagent: {image: {repository: r.io/a/n}}\n", webhook: "r.io/a/w:1.2.3", agent: "r.io/a/n:1.2.3"},
		{name: "tags and registries", values: "global: {imageRegistry: g.io/}\nimage: {registry: m.io, repository: a/w, tag: t1}\nagent: {image: {repository: a/n, tag: t2}}\n",
			webhook: "m.io/a/w:t1", agent: "g.io/a/n:t2"},
		{name: "no repository", values: "image: {repository: a/w}\n", err: "agent.image: repository is empty"},
		{name: "not YAML", values: "image: [", err: "values.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "Chart.yaml"), "appVersion: \"1.2.3\"\nsources: [https://example.com/src]\n")
			write(t, filepath.Join(dir, "values.yaml"), tc.values)
			c, err := readChart(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Webhook != tc.webhook || c.Agent != tc.agent || c.Source != "https://example.com/src" {
				t.Errorf("got %+v", c)
			}
		})
	}
}

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
