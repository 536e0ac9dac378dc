// Package images_test builds gpuadmit's images as `make images` does, on a
// machine without a container daemon, and checks what a cluster would run:
// both architectures in each image's index, the amd64 binaries' --version
// run from the unpacked image (the agent through the image's own loader
// and glibc), the user, entrypoint and labels, the chart deploying exactly
// the images built as the user they run as, two builds giving the same
// digests, and the release workflow calling targets the Makefile has. It
// reads the OCI layout with the standard library alone (not the builder's
// library). It runs with the integration suites (it needs helm, built
// beside kube-apiserver): without KUBEBUILDER_ASSETS it skips, so that
// `make unit` does not build the images too.
package images_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const repoRoot = "../.."

// makeImages runs make images into dir and returns its stdout: one
// reference@digest per image.
func makeImages(t *testing.T, dir string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("make", "-s", "-C", repoRoot, "images", "IMAGES_DIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make images: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Logf("make images: %s\n%s", time.Since(start).Round(time.Second), stdout.String())
	return stdout.String()
}

// git runs git in the repository and returns its trimmed output.
func git(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", repoRoot}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// abs is path relative to the repository root, made absolute.
func abs(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join(repoRoot, path))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
