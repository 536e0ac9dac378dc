package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStartRefusesAMisspeltKey: a configuration key within two edits of
// one the webhook reads (memoryFactr) stops the start-up, exit 2, before
// any cluster is reached, with a line naming the key and the key meant; a
// HAMi key far from every key read is a warning, not an error (the start
// goes on to the cluster, which this test does not give it).
func TestStartRefusesAMisspeltKey(t *testing.T) {
	for _, tt := range []struct{ name, doc, want string }{
		{"HAMi device config", "nvidia:\n  memoryFactr: 1024\n",
			`: nvidia.memoryFactr: unknown key "memoryFactr": did you mean memoryFactor?`},
		{"versioned", "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices:\n  nvidia:\n    memoryFactr: 1024\n",
			`devices.nvidia.memoryFactr: unknown key "memoryFactr": did you mean memoryFactor?`},
		{"gpuadmit's own key", "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\nadmision: {}\n",
			`unknown key "admision": did you mean admission?`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tt.doc), 0o600); err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			if code := run(t.Context(), []string{"--config", path}, io.Discard, &stderr); code != 2 {
				t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr.String())
			}
			if got := stderr.String(); !strings.HasPrefix(got, "webhook: config "+path+": ") || !strings.Contains(got, tt.want) {
				t.Errorf("stderr\n%s\nwant the file and %q", got, tt.want)
			}
		})
	}
}
